"""The context stage, between retrieval and presentation: what a question is shown.

`ops.ask` retrieves ranked hits (memcli.retrieval), then packs them here: `pack` fills the
word budget with per-kind caps, turns in time order under their session's date;
`subjects` reads what the packed memories are about from the store, and `about` groups
what they say about one subject, oldest first, the latest marked; `validity` writes a
fact's validity marks; `excerpt` shows a long message by the passage the question matches,
cut from the message by `passages`.
"""
