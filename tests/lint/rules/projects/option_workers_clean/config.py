"""Settings as a class and as a module (the summarizer's ``Config``): both read 4 workers."""


class Config:
    batch_size = 32
    loader_workers = 4


workers = 4
