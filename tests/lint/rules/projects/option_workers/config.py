"""Settings as a class and as a module (the summarizer's ``Config``): both read 0 workers."""


class Config:
    batch_size = 32
    loader_workers = 0


workers = 0
