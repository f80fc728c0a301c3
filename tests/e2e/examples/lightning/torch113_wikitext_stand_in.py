"""Runs Lightning's Trainer example transformer.py (beside this file,
unedited) in one tony task, with no download, on Debian's torch 1.13. The
Trainer, its strategy (DDP over gloo, chosen because the job asks for two
nodes), the model and the loop are the example's and Lightning's. Its
Trainer flags it does not set itself come from Lightning's own
PL_TRAINER_<FLAG> variables, which the job sets (num_nodes=2, the budget).
Stood in for here, and only here:
- its data: lightning.pytorch.demos.WikiText2 fetches WikiText-2's train.txt
  into ./data/wikitext-2.txt unless the file is there; this writes one first:
  generated text, one line of 10 words over and over (each word's next is
  fixed, so a few steps learn it), long enough for the example's 4,000
  held-out blocks;
- one step of LightningModule.__init__ that cannot run here: on torch < 2.1
  Lightning registers ShardedTensor's state-dict hooks, and torch 1.13's
  ShardedTensor does not import under Python 3.11 (a dataclass field with a
  mutable default, which 3.11 refuses; fixed in torch 2.0). The example has
  no sharded tensors: the registration is skipped, as Lightning skips it on
  torch >= 2.1.
Usage: torch113_wikitext_stand_in.py (no arguments: the example takes none)."""
import os
import runpy

from lightning.pytorch import LightningModule

VOCAB, BLOCKS = 10, 4400  # the example holds out 2 x 2,000 blocks of 35 words


def generated_text(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    line = " ".join(f"w{k}" for k in range(VOCAB)) + "\n"
    with open(path, "w") as f:
        f.write(line * (BLOCKS * 35 // (VOCAB + 1) + 1))  # + the <eos> the tokenizer adds


generated_text(os.path.join("data", "wikitext-2.txt"))
LightningModule._register_sharded_tensor_state_dict_hooks_if_available = lambda self: None
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "transformer.py"), run_name="__main__")
