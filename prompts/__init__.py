"""Built-in prompt files, one per LLM task (packaged as memcli.prompts)."""
