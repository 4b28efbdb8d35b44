"""AWS resource types through boto3: one module per service, one client factory
(``clients``) and one base class (``common``). See ``specs/aws-resources.rst``."""
