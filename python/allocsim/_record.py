"""Record: a dict whose keys read as attributes too (an OOM, an explanation, trace info)."""


class Record(dict):
    """A dict whose keys are also attributes: ``oom.kind`` is ``oom["kind"]``."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self):
        return list(self.keys()) + list(super().__dir__())


def records(value):
    """Dicts to Records, all the way down (lists of dicts included)."""
    if isinstance(value, dict):
        return Record({key: records(item) for key, item in value.items()})
    if isinstance(value, list):
        return [records(item) for item in value]
    return value
