"""YAML for the test environment, through libyaml when PyYAML has it: the fleet seeds are megabytes of CRDs and
objects, and PyYAML's pure-Python parser and emitter spent most of a fleet fixture's own CPU on them (5 of the
7.6 CPU seconds a one-cluster fleet took to seed and load). Safe loading and dumping only."""
import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load(stream):
    return yaml.load(stream, Loader=LOADER)  # nosec B506 - a safe loader


def documents(stream):
    """Every document of stream, empty ones included (as None), in order."""
    return yaml.load_all(stream, Loader=LOADER)  # nosec B506 - a safe loader


def load_all(stream):
    """The documents of stream, empty ones left out."""
    return [document for document in documents(stream) if document]


def dump_all(documents, stream=None, **options):
    return yaml.dump_all(documents, stream, Dumper=DUMPER, **options)
