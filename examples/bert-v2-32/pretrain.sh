#!/bin/sh
# BERT-base on Wikipedia+Books, batch 256, 300k steps, the Amos optimizer: JEstimator's own
# pre-training command (google-research/jestimator, docs/gcp-pretrain.md), run on every worker.
set -e
cd jestimator
PYTHONPATH=. exec python3 jestimator/estimator.py \
  --module_imp="jestimator.models.bert.pretrain" \
  --module_config="jestimator/models/bert/pretrain.py" \
  --module_config.model_config.vocab_size=32000 \
  --module_config.mask_token_id=4 \
  --train_pattern="gs://gresearch/checkpoints_in_amos_paper/data/wikipedia-00???-of-00500,gs://gresearch/checkpoints_in_amos_paper/data/books-00???-of-00500" \
  --valid_pattern="gs://gresearch/checkpoints_in_amos_paper/data/ptb" \
  --train_shuffle_buf=65536 --max_train_steps=300000 \
  --train_batch_size=256 --valid_batch_size=512 --num_valid_examples=512 \
  --check_every_steps=5000 \
  --module_config.opt_config.optimizer="amos" \
  --module_config.opt_config.learning_rate=0.005 \
  --model_dir="$MODEL_DIR" \
  --logtostderr
