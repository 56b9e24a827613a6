"""Scale-out: the same parsing on Spark executors, and the store as a Parquet lake."""
