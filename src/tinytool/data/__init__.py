"""Training data, split by job:

- `tinytool.data.convert`: converters of published formats (xLAM, Hammer masking, ToolACE, Glaive, ShareGPT,
  OpenAI, BFCL) to Conversation JSONL.
- `tinytool.data.demo`: the demo task generator (`generate_demo`, `write_demo`): the executable catalog and its
  seeded world (`demo.catalog`), the value pools (`demo.values`) and generated tools (`demo.proctools`), the two
  tool sources (`demo.sources`) and the one set of task builders over them (`demo.tasks`), request text
  (`demo.text`) and multi-step chains (`demo.chains`).
- `tinytool.data.mixing` and `tinytool.data.stats` work on any Conversation JSONL: irrelevant-tool mixing, counts.
"""
