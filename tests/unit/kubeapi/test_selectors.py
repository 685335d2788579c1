"""Label and field selectors: every operator, the parser's error texts, per-resource field rules."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kubeapi.errors import ApiError
from tests.kubeapi.selectors import (EXISTS, FieldSelectorSpec, Requirement, field_selector_spec,
                                     label_key_errors, label_selector_from_dict, label_value_errors,
                                     parse_field_selector, parse_label_selector)

LABELS = {"app": "web", "tier": "front", "version": "3", "example.com/team": "a"}

REGEX_KEY = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
REGEX_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
               "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
               "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


@pytest.mark.parametrize("selector, expected", [
    ("", True),
    ("app=web", True),
    ("app==web", True),
    ("app=db", False),
    ("app!=db", True),
    ("app!=web", False),
    ("missing!=x", True),            # != matches objects without the key
    ("app in (web,db)", True),
    ("app in (db)", False),
    ("app notin (db,cache)", True),
    ("app notin (web)", False),
    ("missing notin (x)", True),     # notin matches objects without the key
    ("missing in (x)", False),
    ("app", True),
    ("missing", False),
    ("!missing", True),
    ("!app", False),
    ("version>2", True),
    ("version<3", False),
    ("app>1", False),                # non-integer label value never matches gt/lt
    ("missing>1", False),
    ("example.com/team=a", True),
    ("app=web,tier=front", True),    # comma = AND
    ("app=web,tier=back", False),
    ("  app  =  web ,  !missing  ", True),   # whitespace around tokens is ignored
    ("app in (web, db),tier notin (back),version", True),
    ("app=", False),                 # exact match against the empty value
    ("in=x", False),                 # keywords are identifiers in key position
])
def test_label_selector_matches(selector, expected):
    assert parse_label_selector(selector).matches(LABELS) is expected


def test_label_selector_empty_values_and_sorting():
    selector = parse_label_selector("z in (foo,,baz),y,x notin ()")
    assert [(r.key, r.operator, r.values) for r in selector.requirements] == [
        ("x", "notin", ("",)), ("y", EXISTS, ()), ("z", "in", ("", "baz", "foo"))]
    assert str(selector) == "x notin (),y,z in (,baz,foo)"
    assert parse_label_selector("a=").matches({"a": ""})
    assert parse_label_selector("a in (,b)").matches({"a": ""})


def test_label_selector_matches_none_labels():
    assert parse_label_selector("!a").matches(None)
    assert not parse_label_selector("a").matches(None)


@pytest.mark.parametrize("selector, message", [
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("a in x", "unable to parse requirement: found 'x' expected: '('"),
    ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'"),
    ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
    ("a in (x,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
    ("a in (x,", "unable to parse requirement: found '', expected: ',', or identifier"),
    ("a in (x))", "found ')', expected: ',' or 'end of string'"),
    ("a=(", "unable to parse requirement: found '(', expected: identifier"),
    ("a!==b", "unable to parse requirement: found '=', expected: identifier"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("!=a", "found '!=', expected: !, identifier, or 'end of string'"),     # "!=" lexes as one token
    ("! =a", "unable to parse requirement: found '=', expected: identifier"),
    ("=a", "found '=', expected: !, identifier, or 'end of string'"),
    ("a,", "found '', expected: identifier after ','"),
    ("a,,b", "found ',', expected: identifier after ','"),
    ("-a=b", 'unable to parse requirement: <nil>: Invalid value: "-a": name part ' + REGEX_KEY),
    ("a=-b", 'unable to parse requirement: values[0][a]: Invalid value: "-b": ' + REGEX_VALUE),
    ("a in (-b,-c)", 'unable to parse requirement: [values[0][a]: Invalid value: "-b": ' + REGEX_VALUE
     + ', values[1][a]: Invalid value: "-c": ' + REGEX_VALUE + "]"),
    ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value "
            "must be an integer"),
    ("/a=b", 'unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty'),
    ("a/=b", 'unable to parse requirement: <nil>: Invalid value: "a/": name part must be non-empty; name part '
             + REGEX_KEY),
    ("A.com/b=c", 'unable to parse requirement: <nil>: Invalid value: "A.com/b": prefix part a lowercase RFC 1123 '
                  "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end "
                  "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ("a/b/c", 'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name ' + REGEX_KEY
              + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
    ("k=" + "v" * 64, 'unable to parse requirement: values[0][k]: Invalid value: "' + "v" * 64
                      + '": must be no more than 63 characters'),
    ("k" * 64, 'unable to parse requirement: <nil>: Invalid value: "' + "k" * 64
               + '": name part must be no more than 63 characters'),
])
def test_label_selector_errors_are_the_real_ones(selector, message):
    with pytest.raises(ApiError) as raised:
        parse_label_selector(selector)
    assert raised.value.code == 400 and raised.value.reason == "BadRequest"
    assert raised.value.message == message


def test_label_key_and_value_validation_helpers():
    assert label_key_errors("app.kubernetes.io/name") == []
    assert label_value_errors("") == []
    assert label_value_errors("a" * 63) == []
    assert label_value_errors("a b") == [REGEX_VALUE]


def test_requires_exact_match():
    selector = parse_label_selector("app=web,tier in (a),x in (a,b),y!=z")
    assert selector.requires_exact_match("app") == ("web", True)
    assert selector.requires_exact_match("tier") == ("a", True)
    assert selector.requires_exact_match("x") == ("", False)
    assert selector.requires_exact_match("y") == ("", False)
    assert selector.requires_exact_match("other") == ("", False)


@pytest.mark.parametrize("selector_dict, text, matches", [
    ({"matchLabels": {"app": "web"}}, "app=web", True),
    ({"matchLabels": {"tier": "front", "app": "web"}}, "app=web,tier=front", True),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]}, "app in (db,web)", True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, "app notin (web)", False),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "app", True),
    ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, "!app", False),
    ({}, "", True),
])
def test_label_selector_from_dict(selector_dict, text, matches):
    selector = label_selector_from_dict(selector_dict)
    assert str(selector) == text
    assert selector.matches(LABELS) is matches


def test_label_selector_from_dict_none_matches_nothing_and_bad_input_fails():
    assert not label_selector_from_dict(None).matches({})
    with pytest.raises(ApiError, match='"Foo" is not a valid label selector operator'):
        label_selector_from_dict({"matchExpressions": [{"key": "a", "operator": "Foo"}]})
    with pytest.raises(ApiError, match="values set can't be empty"):
        label_selector_from_dict({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})
    with pytest.raises(ApiError, match="values set must be empty for exists"):
        label_selector_from_dict({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})
    with pytest.raises(ApiError, match='key: Invalid value: "-a"'):
        label_selector_from_dict({"matchLabels": {"-a": "b"}})


_label_text = st.from_regex(r"\A[a-z0-9]([a-z0-9.-]{0,8}[a-z0-9])?\Z")


@settings(max_examples=60, deadline=None)
@given(labels=st.dictionaries(_label_text, _label_text, max_size=4), key=_label_text,
       values=st.sets(_label_text, min_size=1, max_size=3))
def test_set_operators_agree_with_their_definitions(labels, key, values):
    joined = ",".join(sorted(values))
    assert parse_label_selector("%s in (%s)" % (key, joined)).matches(labels) == (labels.get(key) in values)
    assert parse_label_selector("%s notin (%s)" % (key, joined)).matches(labels) == (labels.get(key) not in values)
    assert parse_label_selector(key).matches(labels) == (key in labels)
    assert parse_label_selector("!" + key).matches(labels) == (key not in labels)
    # the string form parses back to the same selector
    selector = parse_label_selector("%s in (%s),!%s-x" % (key, joined, key))
    assert parse_label_selector(str(selector)).requirements == selector.requirements


# -- field selectors ------------------------------------------------------------------------------------

POD = {"metadata": {"name": "web-1", "namespace": "default"},
       "spec": {"nodeName": "node-a", "restartPolicy": "Always", "serviceAccountName": "default"},
       "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.7"}]}}


@pytest.mark.parametrize("selector, expected", [
    ("", True),
    ("metadata.name=web-1", True),
    ("metadata.name==web-1", True),
    ("metadata.name!=web-1", False),
    ("metadata.namespace=default,status.phase=Running", True),
    ("status.phase=Pending", False),
    ("spec.nodeName=node-a", True),
    ("spec.host=node-a", True),                 # legacy alias converted to spec.nodeName
    ("spec.hostNetwork=false", True),           # absent hostNetwork reads as "false"
    ("status.podIP=10.0.0.7", True),
    ("status.nominatedNodeName=", True),        # missing field reads as ""
    ("spec.schedulerName!=x", True),
])
def test_pod_field_selector(selector, expected):
    assert parse_field_selector(selector, field_selector_spec("", "pods")).matches(POD) is expected


@pytest.mark.parametrize("group, resource, namespaced, custom, field, message", [
    ("", "pods", True, False, "spec.foo", "field label not supported: spec.foo"),
    ("", "namespaces", False, False, "metadata.namespace", "field label not supported: metadata.namespace"),
    ("", "secrets", True, False, "data", "field label not supported: data"),
    ("", "configmaps", True, False, "data.x",
     '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("apps", "deployments", True, False, "spec.replicas",
     '"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("cluster.x-k8s.io", "machines", True, True, "spec.clusterName", "field label not supported: spec.clusterName"),
    ("cluster.x-k8s.io", "clusterclasses", False, True, "metadata.namespace",
     "field label not supported: metadata.namespace"),
])
def test_unsupported_fields_have_the_real_message(group, resource, namespaced, custom, field, message):
    spec = field_selector_spec(group, resource, namespaced, custom)
    with pytest.raises(ApiError) as raised:
        parse_field_selector(field + "=x", spec)
    assert raised.value.code == 400 and raised.value.message == message


@pytest.mark.parametrize("group, resource, selector, obj", [
    ("", "secrets", "type=Opaque", {"type": "Opaque"}),
    ("", "services", "spec.type=ClusterIP,spec.clusterIP=10.96.0.1", {"spec": {"type": "ClusterIP",
                                                                               "clusterIP": "10.96.0.1"}}),
    ("", "namespaces", "status.phase=Active", {"status": {"phase": "Active"}}),
    ("", "events", "involvedObject.kind=Pod,involvedObject.name=web-1,reason=Started,type=Normal,source=kubelet",
     {"involvedObject": {"kind": "Pod", "name": "web-1"}, "reason": "Started", "type": "Normal",
      "source": {"component": "kubelet"}}),
    ("", "events", "source=ctrl", {"reportingComponent": "ctrl"}),
])
def test_resource_specific_fields(group, resource, selector, obj):
    assert parse_field_selector(selector, field_selector_spec(group, resource)).matches(obj)


def test_custom_resource_selectable_fields_and_plain_field_sets():
    spec = field_selector_spec("example.com", "widgets", True, True, selectable_fields=[".spec.color"])
    assert parse_field_selector("spec.color=red", spec).matches({"spec": {"color": "red"}})
    assert not parse_field_selector("spec.color=red", spec).matches({"spec": {"color": "blue"}})
    plain = parse_field_selector("spec.replicas=3,spec.paused=true", ["spec.replicas", "spec.paused"])
    assert plain.matches({"spec": {"replicas": 3, "paused": True}})
    assert isinstance(plain.spec, FieldSelectorSpec) and "spec.replicas" in plain.spec


@pytest.mark.parametrize("selector, message", [
    ("foo", "invalid selector: 'foo'; can't understand 'foo'"),
    ("metadata.name=a,bar", "invalid selector: 'metadata.name=a,bar'; can't understand 'bar'"),
    ("metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
    ("metadata.name=a\\x", "invalid field selector: invalid escape sequence: \\x"),
    ("metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"),
    ("metadata.name = a", '"metadata.name " is not a known field selector: only "metadata.name", '
                          '"metadata.namespace"'),   # no whitespace trimming in field selectors
])
def test_field_selector_syntax_errors(selector, message):
    with pytest.raises(ApiError) as raised:
        parse_field_selector(selector, field_selector_spec("", "configmaps"))
    assert raised.value.code == 400 and raised.value.message == message


def test_field_selector_escapes_and_introspection():
    selector = parse_field_selector("metadata.name=a\\,b\\=c\\\\d,,metadata.namespace!=x",
                                    field_selector_spec("", "configmaps"))
    assert selector.requires_exact_match("metadata.name") == ("a,b=c\\d", True)
    assert selector.requires_exact_match("metadata.namespace") == ("", False)
    assert selector.matches({"metadata": {"name": "a,b=c\\d", "namespace": "y"}})
    assert str(selector) == "metadata.name=a\\,b\\=c\\\\d,metadata.namespace!=x"
    assert parse_field_selector("", []).empty


def test_requirement_str_forms():
    assert str(Requirement("a", "gt", ("1",))) == "a>1"
    assert str(Requirement("a", "notin", ("y", "x"))) == "a notin (x,y)"
