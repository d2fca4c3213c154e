"""The transformers backend's own decoding machinery: the CPU decoder (greedy steps over buffered KV caches,
prompts sharing a prefix prefilled together, few-rows products chosen by speed and batch invariance), the
compiled static-cache decoder and transformers' continuous batching behind the package's stop rule.
:mod:`apibank.generate.backends` is the model layer that uses them."""
