"""Performance benchmark of the fairseq-wean architectures against fairseq's ``lstm`` (issue 5).

``python -m bench.run`` (or ``bench/run.sh``) measures; ``python -m bench.profile`` says where
the time goes. Neither is part of the test suite.
"""
