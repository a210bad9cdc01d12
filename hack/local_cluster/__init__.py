"""A real, throw-away Kubernetes control plane for the demo and the tests."""
