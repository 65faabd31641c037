"""`memcli eval`: metrics, noise bands, annotated chats, the three-genre bench harness."""
