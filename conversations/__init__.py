"""What was said: conversations, runs, messages, their revisions and pairs."""
