"""Console scripts: fairseq-wean-score, fairseq-wean-align-table, fairseq-wean-train-cpu-dist, ..."""
