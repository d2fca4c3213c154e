"""The level-3 tool set (upstream ``lv3_apis/``): one module per upstream tool file."""
