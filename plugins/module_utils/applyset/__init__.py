"""Core ApplySet library: pure Python, no Ansible imports."""
