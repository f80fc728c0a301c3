"""tony_airflow: the Apache Airflow provider for tony. Airflow finds it by the
`apache_airflow_provider` entry point (pyproject.toml), which names
get_provider_info below: the hooks, operators, sensors, triggers and the
`tony` connection type this package gives."""

__version__ = "0.1.0"


def get_provider_info():
    return {
        "package-name": "tony-airflow",
        "name": "tony",
        "description": "Submit, watch and kill tony jobs (distributed ML training) from Airflow.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "tony",
                "external-doc-url": "https://github.com/linkedin/TonY",
                "tags": ["software"],
            }
        ],
        "hooks": [{"integration-name": "tony", "python-modules": ["tony_airflow.hooks"]}],
        "operators": [{"integration-name": "tony", "python-modules": ["tony_airflow.operators"]}],
        "sensors": [{"integration-name": "tony", "python-modules": ["tony_airflow.sensors"]}],
        "triggers": [{"integration-name": "tony", "python-modules": ["tony_airflow.triggers"]}],
        "connection-types": [{"hook-class-name": "tony_airflow.hooks.TonyHook", "connection-type": "tony"}],
    }
