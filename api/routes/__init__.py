"""api/routes package."""
