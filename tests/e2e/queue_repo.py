"""Add to a test repository (argv[1], made by make_fixtures.py) the models
of queue.bats: make_fixtures' slow model (x: [B,256,1024] through 24
products by the identity, about 0.1 s a row on an idle core) under
several queue policies.  preferred_batch_size 1 makes every request a run
of its own, so the order of runs is the order the scheduler chose; an
8-row request holds the one instance for about 0.8 s.

  qprio     priority_levels 2 (default 2), DELAY, timeouts may be set
  qreject   REJECT after 150 ms in the queue; timeouts may not be set
  qfull     max_queue_size 1
"""
import os
import shutil
import sys

root = sys.argv[1]
common = ('max_batch_size: 8\n'
          'instance_group [ { count: 1, kind: KIND_CPU } ]\n')
configs = {
    "qprio": 'dynamic_batching { preferred_batch_size: 1\n'
             '  priority_levels: 2 default_priority_level: 2\n'
             '  default_queue_policy { timeout_action: DELAY allow_timeout_override: true } }\n',
    "qreject": 'dynamic_batching { preferred_batch_size: 1\n'
               '  default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 150000 } }\n',
    "qfull": 'dynamic_batching { preferred_batch_size: 1 max_queue_size: 1 }\n',
}
for name, config in configs.items():
    os.makedirs(os.path.join(root, name, "1"), exist_ok=True)
    shutil.copy(os.path.join(root, "slow", "1", "model.onnx"),
                os.path.join(root, name, "1", "model.onnx"))
    with open(os.path.join(root, name, "config.pbtxt"), "w") as f:
        f.write(common + config)
