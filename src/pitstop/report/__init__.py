"""Renderers: values in, text out (terminal tables, JSON documents, HTML)."""
