#!/usr/bin/env python3
# Writes OUT_DIR/config.json: SRC_DIR/config.json with num_hidden_layers set
# to LAYERS (the GPU scripts' layer cuts; the cut's per-layer kernels are the
# full model's). usage: cut_config.py SRC_DIR OUT_DIR LAYERS
import json, os, sys

src, out, layers = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = json.load(open(os.path.join(src, "config.json")))
c["num_hidden_layers"] = layers
os.makedirs(out, exist_ok=True)
json.dump(c, open(os.path.join(out, "config.json"), "w"), indent=1)
