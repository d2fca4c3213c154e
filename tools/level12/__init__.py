"""The level-1/2 tool set (upstream ``apis/``): one module per upstream tool file."""
