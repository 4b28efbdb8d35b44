"""Templates the functional tests send, as text (so errors can name lines)."""

CHAIN = """\
heat_template_version: 2018-08-31
description: three resources in a depends_on chain
parameters:
  greeting: {type: string, default: hello}
  secret: {type: string, default: s3cr3t-value, hidden: true}
resources:
  first:
    type: OS::Heat::TestResource
    properties:
      value: {get_param: greeting}
      wait_secs: 0.3
  second:
    type: OS::Heat::RandomString
    depends_on: first
    properties: {length: 8}
  third:
    type: OS::Heat::TestResource
    depends_on: second
    properties:
      value:
        str_replace:
          template: $g-$r
          params: {$g: {get_attr: [first, output]}, $r: {get_resource: second}}
outputs:
  joined:
    description: the value of third
    value: {get_attr: [third, output]}
  leaked:
    value: {list_join: ['/', [{get_param: secret}, x]]}
"""

FAILING = """\
heat_template_version: 2018-08-31
resources:
  ok:
    type: OS::Heat::None
  broken:
    type: OS::Heat::TestResource
    depends_on: ok
    properties: {fail: true}
  never:
    type: OS::Heat::None
    depends_on: broken
"""

WIDE = """\
heat_template_version: 2018-08-31
resources:
""" + "".join(
    f"  r{i}:\n    type: OS::Heat::TestResource\n    properties: {{wait_secs: 1}}\n"
    for i in range(10))

FOREVER = """\
heat_template_version: 2018-08-31
resources:
  slow:
    type: OS::Heat::TestResource
    # Create waits forever; delete does not, so a timed-out stack can be deleted.
    properties: {action_wait_secs: {create: -1, delete: 0}}
"""

# Something of every update kind: a RandomString untouched by a parameter change, "a"
# updated in place, and "b" (update_replace) replaced when its value changes.
UPDATABLE = """\
heat_template_version: 2018-08-31
parameters:
  v: {type: string, default: one}
resources:
  word:
    type: OS::Heat::RandomString
    properties: {length: 10}
  a:
    type: OS::Heat::TestResource
    properties: {value: {get_param: v}}
  b:
    type: OS::Heat::TestResource
    properties:
      value: {get_attr: [a, output]}
      update_replace: true
outputs:
  word: {value: {get_attr: [word, value]}}
  b: {value: {get_attr: [b, output]}}
"""
