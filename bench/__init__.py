"""Benchmarks that print JSON (``python manage.py benchmark NAME --json``)."""
