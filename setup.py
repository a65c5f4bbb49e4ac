"""fairseq-wean: WEAN, CoRe and Word-Attention models as a fairseq plugin.

fairseq 0.12.2 (the last upstream release) cannot be imported on Python >= 3.11
(a dataclass with a mutable default), so on those Pythons we depend on the
``fairseq-fixed`` distribution, which ships the same ``fairseq`` import package.
fastBPE is deliberately not a dependency: 0.1.0 does not build on Python 3.11
(stale generated C++). fastBPE-format codes are read by subword-nmt instead
(``--bpe subword_nmt --bpe-codes CODES``), see docs/install.md.
"""
from setuptools import find_packages, setup

setup(
    name="fairseq-wean",
    version="0.1.0",
    description="WEAN, CoRe and word-attention models for paraphrase-oriented generation, as a fairseq plugin",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.10,<3.12",  # what was tested: 3.11 (fairseq-fixed 0.12.3.1), 3.10 (fairseq 0.12.2); docs/install.md
    packages=find_packages(include=["fairseq_wean", "fairseq_wean.*", "preprocess", "preprocess.*"]),
    install_requires=[
        "fairseq==0.12.2; python_version < '3.11'",
        "fairseq-fixed==0.12.3.1; python_version >= '3.11'",
        "torch>=1.13",
        "numpy<2; python_version < '3.11'",  # torch 1.13 (fairseq 0.12.2's) was built against numpy 1
        "sentencepiece",
        "sacrebleu>=2.0",
        "subword-nmt",
        "sacremoses",
        "rouge-score",
        "textstat",
        "eflomal",
        "matplotlib",
        "tensorboardX",  # fairseq-train --tensorboard-logdir
    ],
    extras_require={"dev": ["pytest", "pytest-xdist"]},  # the suite runs on every core (pytest.ini)
    entry_points={
        "console_scripts": [
            "fairseq-wean-score = fairseq_wean.cli.score:cli_main",
            "fairseq-wean-align-table = fairseq_wean.cli.align_table:cli_main",
            "fairseq-wean-report = fairseq_wean.cli.report:cli_main",
            "fairseq-wean-train-cpu-dist = fairseq_wean.cli.train_cpu_dist:cli_main",
            "fairseq-wean-compare = fairseq_wean.compare.cli:cli_main",
        ]
    },
)
