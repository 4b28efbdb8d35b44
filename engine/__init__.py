"""Kiln: an orchestration engine speaking the OpenStack Heat v1 API."""
