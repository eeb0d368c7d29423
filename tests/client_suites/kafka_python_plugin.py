"""pytest plugin that points kafka-python's own integration suite at a
running headrace cluster instead of the Kafka it would spawn.

kafka-python's fixtures (test/integration/fixtures.py) already accept an
external broker (KAFKA_URI: KafkaFixture.instance(..., external=True)); this
plugin only changes what an external fixture is:
  - replicas = HEADRACE_SUITE_REPLICAS (3 against a 3-broker cluster), so
    every test topic is created with that replication factor;
  - bootstrap_servers = every broker of the cluster (HEADRACE_SUITE_BOOTSTRAP),
    not the single host:port of KAFKA_URI.
The sdist ships no test/service.py (it spawns Java processes); the runner
writes a stub of its two names, used only by the spawned-Kafka paths.
"""
import os


def pytest_configure(config):
    from test.integration import fixtures

    replicas = int(os.environ.get('HEADRACE_SUITE_REPLICAS', '3'))
    bootstrap = os.environ['HEADRACE_SUITE_BOOTSTRAP']
    original = fixtures.KafkaFixture.instance.__func__

    def instance(cls, broker_id, *args, **kwargs):
        if kwargs.get('external'):
            kwargs['replicas'] = replicas
        fixture = original(cls, broker_id, *args, **kwargs)
        if fixture.external:
            fixture.bootstrap_server = lambda: bootstrap
        return fixture

    fixtures.KafkaFixture.instance = classmethod(instance)
