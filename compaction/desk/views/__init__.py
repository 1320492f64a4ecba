"""The desk's pages."""
