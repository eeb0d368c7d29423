"""Stand-in for kafka-python's test/service.py, which its sdist does not
ship. Against an external cluster only ExternalService is constructed."""


class ExternalService:
    def __init__(self, host, port):
        self.host = host
        self.port = port

    def dump_logs(self):
        pass

    def stop(self):
        pass


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError('headrace client suites: spawning Kafka is not supported')
