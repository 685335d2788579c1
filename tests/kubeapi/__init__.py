"""A local Kubernetes API server for tests and the demo (see README.md).

Run: `.venv/bin/python -m tests.kubeapi serve --kubeconfig PATH [--port N] [--seed DIR ...] [--state-file FILE]`.
"""
