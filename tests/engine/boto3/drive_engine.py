"""Drives `plangate engine serve` with boto3 through every operation the engine serves, and
checks each answer against botocore's Step Functions service model: every required output member
present, no member the model does not define, every value of the model's type (and enum), and
the error code AWS's reference gives for bad requests.

    python3 drive_engine.py <endpoint URL> <operation,operation,...>

The second argument lists the operations the engine serves: each must be exercised, or skipped
with a reason (an operation this botocore's model predates). Prints one line per check and, last,
a JSON summary {"botocore", "exercised", "skipped", "failures"}; exits 1 on any failure.
"""

import json
import sys
import time

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = sys.argv[1]
SERVED = [op for op in sys.argv[2].split(",") if op]
ROLE = "arn:aws:iam::123456789012:role/boto3"

# Members the Step Functions API gained after old botocore releases (redrive, versions and
# aliases, encryption, variables). Answered by the engine as AWS answers them today; when this
# botocore's model predates one of them, it is noted, not failed.
NEWER_MEMBERS = {
    "redriveCount",
    "redriveDate",
    "redriveStatus",
    "redriveStatusReason",
    "stateMachineVersionArn",
    "stateMachineAliasArn",
    "revisionId",
    "description",
    "encryptionConfiguration",
    "variableReferences",
    "executionRedrivenEventDetails",
    "mapRunRedrivenEventDetails",
    "evaluationFailedEventDetails",
    "assignedVariables",
    "assignedVariablesDetails",
}

session = boto3.session.Session()
common = dict(
    endpoint_url=ENDPOINT,
    region_name="us-east-1",
    aws_access_key_id="local",
    aws_secret_access_key="local",
)
# StartSyncExecution is modeled with the host prefix `sync-`: `sync-127.0.0.1` does not resolve,
# so a local endpoint needs inject_host_prefix=False (docs/engine-activities.md).
config = dict(inject_host_prefix=False, retries={"max_attempts": 1}, read_timeout=90)
client = session.client("stepfunctions", config=Config(**config), **common)
# botocore checks min lengths before sending: this one lets the server answer them
unchecked = session.client(
    "stepfunctions", config=Config(parameter_validation=False, **config), **common
)
model = client.meta.service_model

raw_bodies = {}


def remember_body(http_response, model, **_):
    raw_bodies[model.name] = http_response.content


for c in (client, unchecked):
    c.meta.events.register("after-call", remember_body)

exercised = set()
skipped = {}
failures = []
notes = set()


def fail(what):
    failures.append(what)
    print("FAIL", what, flush=True)


def known(operation):
    if operation in model.operation_names:
        return True
    skipped[operation] = f"botocore {botocore.__version__} does not model {operation}"
    return False


def check_shape(shape, value, where):
    """Checks a JSON value of the raw answer against a shape of the model."""
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            return fail(f"{where}: expected an object, got {json.dumps(value)[:80]}")
        for name in shape.required_members:
            if name not in value:
                fail(f"{where}: required member '{name}' is missing")
        for name, member in value.items():
            if name not in shape.members:
                if name in NEWER_MEMBERS:
                    notes.add(f"{where.split('.')[0]}.{name} (not in this botocore's model)")
                else:
                    fail(f"{where}: member '{name}' is not in the model")
                continue
            check_shape(shape.members[name], member, f"{where}.{name}")
    elif kind == "list":
        if not isinstance(value, list):
            return fail(f"{where}: expected a list")
        for i, item in enumerate(value):
            check_shape(shape.member, item, f"{where}[{i}]")
    elif kind == "map":
        if not isinstance(value, dict):
            return fail(f"{where}: expected a map")
        for k, v in value.items():
            check_shape(shape.value, v, f"{where}[{k}]")
    elif kind == "string":
        if not isinstance(value, str):
            return fail(f"{where}: expected a string, got {json.dumps(value)[:80]}")
        if shape.enum and value not in shape.enum:
            fail(f"{where}: '{value}' is not one of {shape.enum}")
    elif kind in ("integer", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            fail(f"{where}: expected an integer, got {json.dumps(value)[:80]}")
    elif kind in ("float", "double"):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            fail(f"{where}: expected a number")
    elif kind == "boolean":
        if not isinstance(value, bool):
            fail(f"{where}: expected a boolean, got {json.dumps(value)[:80]}")
    elif kind == "timestamp":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            fail(f"{where}: expected epoch seconds, got {json.dumps(value)[:80]}")
    elif kind == "blob":
        if not isinstance(value, str):
            fail(f"{where}: expected base64 text")


def call(operation, via=None, **params):
    """Calls an operation and checks its raw answer against the model; returns the parsed answer."""
    if not known(operation):
        return None
    exercised.add(operation)
    method = getattr(via or client, botocore.xform_name(operation))
    params = modeled_params(operation, params)
    try:
        answer = method(**params)
    except ClientError as error:
        fail(f"{operation}({short(params)}): {error.response['Error']}")
        return None
    output = model.operation_model(operation).output_shape
    body = json.loads(raw_bodies.get(operation) or b"{}")
    if output is not None:
        check_shape(output, body, operation)
    elif body != {}:
        fail(f"{operation}: answers {body} where the model has no output")
    print("ok", operation, short(params), flush=True)
    return answer


def modeled_params(operation, params):
    """The members this botocore's model knows (an older model lacks newer ones: noted, not sent)."""
    members = model.operation_model(operation).input_shape.members
    for name in params:
        if name not in members:
            notes.add(f"{operation}.{name} not sent (not in this botocore's model)")
    return {k: v for k, v in params.items() if k in members}


def modeled(operation, member):
    """Whether this botocore's model has a member of an operation's input or output."""
    if operation not in model.operation_names:
        return False
    op = model.operation_model(operation)
    return any(s is not None and member in s.members for s in (op.input_shape, op.output_shape))


def error(operation, code, contains=None, via=None, **params):
    """Calls an operation that must fail with `code` (an error the model lists, or a validation one)."""
    if not known(operation):
        return None
    exercised.add(operation)
    method = getattr(via or client, botocore.xform_name(operation))
    try:
        method(**modeled_params(operation, params))
    except ClientError as caught:
        got = caught.response["Error"]
        status = caught.response["ResponseMetadata"]["HTTPStatusCode"]
        modeled = [e.name for e in model.operation_model(operation).error_shapes]
        if got.get("Code") != code:
            return fail(f"{operation}({short(params)}): expected {code}, got {got}")
        if code not in modeled and code != "ValidationException":
            fail(f"{operation}: {code} is not among the model's errors {modeled}")
        if status != 400:
            fail(f"{operation}: {code} came with HTTP {status}, not 400")
        if contains and contains not in got.get("Message", ""):
            fail(f"{operation}: message {got.get('Message')!r} does not name {contains!r}")
        print("ok", operation, "->", code, flush=True)
        return got.get("Message")
    fail(f"{operation}({short(params)}): expected {code}, but it succeeded")


def short(params):
    # task tokens stay out of the output, like every log of the project
    shown = {k: ("<token>" if k == "taskToken" and len(v) > 20 else v) for k, v in params.items()}
    text = json.dumps(shown, default=str)
    return text if len(text) < 100 else text[:97] + "..."


def await_end(arn, within=20):
    deadline = time.time() + within
    while time.time() < deadline:
        described = client.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.02)
    fail(f"{arn} did not end within {within} s")
    return client.describe_execution(executionArn=arn)


def machine(states, **extra):
    return json.dumps({"StartAt": next(iter(states)), "States": states, **extra})


PASS = machine({"P": {"Type": "Pass", "Result": {"v": 1}, "End": True}})
PASS2 = machine({"P": {"Type": "Pass", "Result": {"v": 2}, "End": True}})
FAIL = machine({"F": {"Type": "Fail", "Error": "Boom", "Cause": "on purpose"}})
HOLD = machine({"W": {"Type": "Wait", "Seconds": 3600, "End": True}})
ACCOUNT = "arn:aws:states:us-east-1:123456789012"

# ---- state machines, versions, aliases ----------------------------------------------------------
call("ListStateMachines")
created = call(
    "CreateStateMachine",
    name="Flow",
    definition=PASS,
    roleArn=ROLE,
    tags=[{"key": "team", "value": "plangate"}],
    publish=True,
    versionDescription="first",
)
flow = f"{ACCOUNT}:stateMachine:Flow"
# versions and aliases came to the API after old botocore releases
versions = modeled("CreateStateMachine", "publish") and known("CreateStateMachineAlias")
v1 = created and created.get("stateMachineVersionArn")
if versions and created and v1 != f"{flow}:1":
    fail(f"CreateStateMachine publish=True: stateMachineVersionArn {v1!r}")
call("DescribeStateMachine", stateMachineArn=flow)
call("UpdateStateMachine", stateMachineArn=flow, definition=PASS2, publish=True)
v2 = f"{flow}:2"
call("PublishStateMachineVersion", stateMachineArn=flow, description="again")
call("ListStateMachineVersions", stateMachineArn=flow)
alias = f"{flow}:live"
call(
    "CreateStateMachineAlias",
    name="live",
    routingConfiguration=[{"stateMachineVersionArn": v2, "weight": 100}],
)
call("DescribeStateMachineAlias", stateMachineAliasArn=alias)
call("UpdateStateMachineAlias", stateMachineAliasArn=alias, description="current")
call("ListStateMachineAliases", stateMachineArn=flow)
call("ListStateMachines", maxResults=1)

# ---- executions ----------------------------------------------------------------------------------
started = {}
runs = (("v1", f"{flow}:1"), ("alias", alias), ("latest", flow)) if versions else (("latest", flow),)
for label, arn in runs:
    answer = call("StartExecution", stateMachineArn=arn, name=f"run-{label}", input='{"k": 1}')
    if answer:
        started[label] = answer["executionArn"]
        await_end(answer["executionArn"])


def listed(**params):
    answer = call("ListExecutions", **params)
    return sorted(e["name"] for e in (answer or {}).get("executions", []))


if len(started) == 3:
    for arn, names in (
        (flow, ["run-alias", "run-latest", "run-v1"]),
        (f"{flow}:1", ["run-v1"]),
        (v2, ["run-alias"]),
        (alias, ["run-alias"]),
    ):
        got = listed(stateMachineArn=arn)
        if got != names:
            fail(f"ListExecutions({arn}) listed {got}, not {names}")
    described = call("DescribeExecution", executionArn=started["alias"])
    if described and (
        described.get("stateMachineAliasArn") != alias or described.get("stateMachineVersionArn") != v2
    ):
        fail(f"DescribeExecution of an alias run: {described}")
    for_execution = call("DescribeStateMachineForExecution", executionArn=started["v1"])
    if for_execution and for_execution["definition"] != PASS:
        fail("DescribeStateMachineForExecution: not the definition version 1 ran")
if started:
    described = call("DescribeExecution", executionArn=started["latest"])
    reason = described and described.get("redriveStatusReason")
    if modeled("DescribeExecution", "redriveStatusReason") and reason != (
        "Execution is SUCCEEDED and cannot be redriven"
    ):
        fail(f"DescribeExecution redriveStatusReason {reason!r}")
    if modeled("DescribeExecution", "includedData"):
        metadata_only = call("DescribeExecution", executionArn=started["latest"], includedData="METADATA_ONLY")
        if metadata_only and ("input" in metadata_only or "output" in metadata_only):
            fail("DescribeExecution includedData=METADATA_ONLY still has input/output")
    call("DescribeStateMachineForExecution", executionArn=started["latest"])
    page = call("GetExecutionHistory", executionArn=started["latest"], maxResults=2)
    if page and page.get("nextToken"):
        call(
            "GetExecutionHistory",
            executionArn=started["latest"],
            maxResults=2,
            nextToken=page["nextToken"],
            reverseOrder=True,
            includeExecutionData=False,
        )
    else:
        fail("GetExecutionHistory maxResults=2 gave no nextToken")
error("ListExecutions", "ValidationException", stateMachineArn=flow, statusFilter="DONE")
if modeled("ListExecutions", "redriveFilter"):
    error("ListExecutions", "ValidationException", stateMachineArn=flow, redriveFilter="SOMETIMES")
error(
    "DescribeStateMachine",
    "StateMachineDoesNotExist",
    contains=f"{ACCOUNT}:stateMachine:Nope",
    stateMachineArn=f"{ACCOUNT}:stateMachine:Nope",
)
error(
    "StartExecution",
    "StateMachineDoesNotExist",
    contains=f"{ACCOUNT}:stateMachine:Nope",
    stateMachineArn=f"{ACCOUNT}:stateMachine:Nope",
)
error(
    "DescribeExecution",
    "ExecutionDoesNotExist",
    contains=f"{ACCOUNT}:execution:Flow:nope",
    executionArn=f"{ACCOUNT}:execution:Flow:nope",
)
error("DescribeExecution", "InvalidArn", executionArn="not-an-arn")
error("StartExecution", "ValidationException", stateMachineArn=flow, name="n" * 81)
error("CreateStateMachine", "ValidationException", name="m" * 81, definition=PASS, roleArn=ROLE)
error("CreateStateMachine", "InvalidDefinition", name="Broken", definition="{}", roleArn=ROLE)
error("StartExecution", "InvalidExecutionInput", stateMachineArn=flow, input="{not json")

# failed, redriven
failing = call("CreateStateMachine", name="Failing", definition=FAIL, roleArn=ROLE)
if failing:
    run = call("StartExecution", stateMachineArn=failing["stateMachineArn"], name="once")
    failed = await_end(run["executionArn"])
    redrivable = failed.get("redriveStatus", "REDRIVABLE")  # an older model drops it
    if failed["status"] != "FAILED" or redrivable != "REDRIVABLE":
        fail(f"a failed execution: {failed}")
    call("StartExecution", stateMachineArn=failing["stateMachineArn"], name="never-redriven")
    call("RedriveExecution", executionArn=run["executionArn"])
    await_end(run["executionArn"])
    machine_arn = failing["stateMachineArn"]
    if modeled("ListExecutions", "redriveFilter") and known("RedriveExecution"):
        for flt, names in (("REDRIVEN", ["once"]), ("NOT_REDRIVEN", ["never-redriven"])):
            got = listed(stateMachineArn=machine_arn, redriveFilter=flt)
            if got != names:
                fail(f"ListExecutions redriveFilter={flt} listed {got}, not {names}")
    else:
        notes.add("ListExecutions.redriveFilter (not in this botocore's model)")
    if listed(stateMachineArn=machine_arn, statusFilter="FAILED") != ["never-redriven", "once"]:
        fail("ListExecutions statusFilter=FAILED")

# running, stopped
holding = call("CreateStateMachine", name="Holding", definition=HOLD, roleArn=ROLE)
if holding:
    run = call("StartExecution", stateMachineArn=holding["stateMachineArn"], name="hold")
    running = call("DescribeExecution", executionArn=run["executionArn"])
    if running and running.get("redriveStatusReason", "Execution is RUNNING and cannot be redriven") != (
        "Execution is RUNNING and cannot be redriven"
    ):
        fail(f"a running execution's redriveStatusReason: {running.get('redriveStatusReason')!r}")
    call("StopExecution", executionArn=run["executionArn"], error="Stop", cause="test")
    error("StopExecution", "ValidationException", executionArn=run["executionArn"])

# EXPRESS, synchronous
express = call("CreateStateMachine", name="Quick", definition=PASS, roleArn=ROLE, type="EXPRESS")
if express:
    synced = call("StartSyncExecution", stateMachineArn=express["stateMachineArn"], input="{}")
    if synced and (synced["status"] != "SUCCEEDED" or synced.get("output") != '{"v":1}'):
        fail(f"StartSyncExecution: {synced}")
    if modeled("StartSyncExecution", "includedData"):
        quiet = call(
            "StartSyncExecution",
            stateMachineArn=express["stateMachineArn"],
            input="{}",
            includedData="METADATA_ONLY",
        )
        if quiet and ("input" in quiet or "output" in quiet):
            fail("StartSyncExecution includedData=METADATA_ONLY still has input/output")
    error("StartSyncExecution", "StateMachineTypeNotSupported", stateMachineArn=flow)

# ---- validation ----------------------------------------------------------------------------------
if known("ValidateStateMachineDefinition"):
    broken = machine({"A": {"Type": "Pass", "Next": "X"}, "B": {"Type": "Pass", "Next": "Y"}})
    full = call("ValidateStateMachineDefinition", definition=broken)
    one = call("ValidateStateMachineDefinition", definition=broken, maxResults=1)
    if full and one:
        if len(full["diagnostics"]) < 2 or full.get("truncated") is not False:
            fail(f"ValidateStateMachineDefinition: {full}")
        if len(one["diagnostics"]) != 1 or one.get("truncated") is not True:
            fail(f"ValidateStateMachineDefinition maxResults=1: {one}")
    ok = call("ValidateStateMachineDefinition", definition=PASS, type="STANDARD", severity="ERROR")
    if ok and (ok["result"] != "OK" or ok["diagnostics"] != []):
        fail(f"ValidateStateMachineDefinition of a valid definition: {ok}")

# ---- tags ----------------------------------------------------------------------------------------
tags = call("ListTagsForResource", resourceArn=flow)
if tags and tags.get("tags") != [{"key": "team", "value": "plangate"}]:
    fail(f"ListTagsForResource after CreateStateMachine tags: {tags}")
call("TagResource", resourceArn=flow, tags=[{"key": "env", "value": "local"}, {"key": "team", "value": "core"}])
call("UntagResource", resourceArn=flow, tagKeys=["env"])
tags = call("ListTagsForResource", resourceArn=flow)
if tags and tags.get("tags") != [{"key": "team", "value": "core"}]:
    fail(f"ListTagsForResource after TagResource/UntagResource: {tags}")
error("ListTagsForResource", "ResourceNotFound", contains=f"{ACCOUNT}:stateMachine:Nope", resourceArn=f"{ACCOUNT}:stateMachine:Nope")
error("TagResource", "InvalidArn", resourceArn="arn:aws:s3:::bucket", tags=[])
error(
    "TagResource",
    "TooManyTags",
    resourceArn=flow,
    tags=[{"key": f"k{i}", "value": "v"} for i in range(51)],
)
error("UntagResource", "ResourceNotFound", resourceArn=f"{ACCOUNT}:activity:nope", tagKeys=["a"])

# ---- activities and task tokens ------------------------------------------------------------------
activity = call("CreateActivity", name="resize", tags=[{"key": "kind", "value": "worker"}])
call("DescribeActivity", activityArn=f"{ACCOUNT}:activity:resize")
call("ListActivities")
activity_tags = call("ListTagsForResource", resourceArn=f"{ACCOUNT}:activity:resize")
if activity_tags and activity_tags.get("tags") != [{"key": "kind", "value": "worker"}]:
    fail(f"ListTagsForResource of an activity: {activity_tags}")
error("CreateActivity", "ValidationException", name="a" * 81)
error(
    "DescribeActivity",
    "ActivityDoesNotExist",
    contains=f"{ACCOUNT}:activity:missing",
    activityArn=f"{ACCOUNT}:activity:missing",
)
worker = machine(
    {"Work": {"Type": "Task", "Resource": f"{ACCOUNT}:activity:resize", "HeartbeatSeconds": 60, "End": True}}
)
working = call("CreateStateMachine", name="Working", definition=worker, roleArn=ROLE)
if working and activity:
    for outcome in ("success", "failure"):
        run = call("StartExecution", stateMachineArn=working["stateMachineArn"], input='{"n": 1}')
        task = call("GetActivityTask", activityArn=activity["activityArn"], workerName="w1")
        token = task and task.get("taskToken")
        if not token:
            fail("GetActivityTask gave no task")
            break
        call("SendTaskHeartbeat", taskToken=token)
        if outcome == "success":
            call("SendTaskSuccess", taskToken=token, output='{"done": true}')
            expected = "SUCCEEDED"
        else:
            call("SendTaskFailure", taskToken=token, error="Bad", cause="worker gave up")
            expected = "FAILED"
        if await_end(run["executionArn"])["status"] != expected:
            fail(f"the activity task's {outcome} did not end the execution {expected}")
        error("SendTaskSuccess", "TaskTimedOut", taskToken=token, output="{}")
for operation, extra in (
    ("SendTaskSuccess", {"output": "{}"}),
    ("SendTaskFailure", {}),
    ("SendTaskHeartbeat", {}),
):
    error(operation, "ValidationException", via=unchecked, taskToken="", **extra)
    error(operation, "ValidationException", taskToken="t" * 2049, **extra)
    error(operation, "InvalidToken", taskToken="not-a-token", **extra)
error("StartExecution", "ValidationException", via=unchecked, stateMachineArn=flow, name="")
call("DeleteActivity", activityArn=f"{ACCOUNT}:activity:resize")

# ---- clean-up: aliases, versions, machines -------------------------------------------------------
if versions:
    error("DeleteStateMachineVersion", "ConflictException", stateMachineVersionArn=v2)
    call("DeleteStateMachineAlias", stateMachineAliasArn=alias)
    call("DeleteStateMachineVersion", stateMachineVersionArn=v2)
else:
    known("DeleteStateMachineAlias")
    known("DeleteStateMachineVersion")
call("DeleteStateMachine", stateMachineArn=flow)

for operation in SERVED:
    if operation not in exercised and operation not in skipped:
        fail(f"{operation} is served by the engine but this suite never called it")
for operation, reason in sorted(skipped.items()):
    print("skip", operation, "-", reason)
for note in sorted(notes):
    print("note", note)
print(
    json.dumps(
        {
            "botocore": botocore.__version__,
            "exercised": sorted(exercised),
            "skipped": skipped,
            "failures": failures,
        }
    )
)
sys.exit(1 if failures else 0)
