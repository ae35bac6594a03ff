"""Adapters that let agent frameworks keep their records in agentfolio.

Each one is an optional extra (``pip install agentfolio[maf]``) and imports its
framework only when it is itself imported.
"""
