"""Servers in front of :class:`~graphmem.Memory`: the REST server (:mod:`.rest`, ``graphmem serve``) and
the MCP server (:mod:`.mcp`, ``graphmem mcp``).

Each needs the ``server`` extra (``pip install 'graphmem[server]'``); nothing here is imported by
``import graphmem``.
"""
