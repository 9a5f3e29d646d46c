"""Training data: converters from public datasets and the bundled demo catalog + task generator.

`tinytool.data.demo.catalog` holds the executable demo tools and their seeded world;
`tinytool.data.demo` turns them into BFCL-style and multi-step tasks (`generate_demo`, `write_demo`).
"""
