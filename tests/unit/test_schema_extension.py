"""The schema registry is the one place a type is added: a throw-away entity
type, added to :mod:`kg.schema` only, flows to the model, the mapping, the
named queries, the REST API (its own list route, filter, JSON keys, response
models), the graph exports and ``GET /schema`` (the explorer's legend).

The type is added in a fresh interpreter, before anything else of the project
is imported, so no test shares the changed module state.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SCRIPT = r"""
import json, sys
from pathlib import Path

import kg.schema as schema

SOFTWARE = schema.EntityKind(
    "Software", "software", "softwares", "Software", "#7a4fbf", "#e6dcf7", "using",
    (schema.Relation("usesSoftware", "uses_software", "softwares", "Software", "uses software"),),
    rank=4,
)
schema.ENTITY_TYPES = (*schema.ENTITY_TYPES, SOFTWARE)
schema.EntityType = schema._entity_enum(schema.ENTITY_TYPES)

from fastapi.testclient import TestClient

from kg.read import exporters
from kg.read.graphview import build_graph
from kg.mapping.papers import map_paper
from kg.model import Entity, EntityType, Mention, PaperExtraction, Record
from kg.store.embedded import open_store
from kg.vocab import entity_iri
from service.app import create_app
from service.settings import Settings

path = Path(sys.argv[1])
store = open_store(path)
abstract = "We train unlearning models with PyTorch."
def entity(kind, key, label, start):
    mention = Mention(label, start, start + len(label), 0, len(abstract))
    return Entity(kind, key, label, entity_iri(kind.value, key), [mention])
paper = PaperExtraction(
    Record(id="p1", abstract=abstract, title="A paper"),
    [entity(EntityType.TASK, "unlearning", "unlearning", 9),
     entity(EntityType.SOFTWARE, "pytorch", "PyTorch", 33)],
    [],
    "test",
)
store.write_papers([map_paper(paper)], new=True)
drawn = build_graph(store)
cyto = json.loads(exporters.exporter("cytoscape").write(drawn))
store.close()

out = {"graph_types": sorted({d["type"] for _, d in drawn.nodes(data=True)}),
       "cytoscape": [n["data"] for n in cyto["elements"]["nodes"]]}
app = create_app(Settings(store=str(path), query_workers=1, log_level="warning"))
with TestClient(app) as client:
    for name, url in [
        ("schema", "/schema"), ("list", "/softwares"), ("filter", "/papers?software=pytorch"),
        ("paper", "/papers/p1"), ("entity", "/entities/software/pytorch"),
        ("stats", "/stats"), ("openapi", "/openapi.json"),
    ]:
        response = client.get(url)
        out[name] = {"status": response.status_code, "body": response.json()}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def extended(tmp_path_factory: pytest.TempPathFactory) -> dict:
    store = tmp_path_factory.mktemp("extended") / "store"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(store)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_new_type_is_in_get_schema_for_the_explorer_legend(extended: dict) -> None:
    kinds = {k["name"]: k for k in extended["schema"]["body"]["entity_types"]}
    assert kinds["Software"]["colour"] == "#7a4fbf"
    assert kinds["Software"]["relations"][0]["label"] == "uses software"


def test_the_new_type_has_its_rest_routes_filter_and_json_keys(extended: dict) -> None:
    listed = extended["list"]
    assert listed["status"] == 200, listed
    assert [i["key"] for i in listed["body"]["items"]] == ["pytorch"]
    assert extended["filter"]["body"]["total"] == 1
    paper = extended["paper"]["body"]
    assert [e["label"] for e in paper["softwares"]] == ["PyTorch"]
    assert paper["softwares"][0]["mentions"] == [{"text": "PyTorch", "start": 33, "end": 40}]
    entity = extended["entity"]["body"]
    assert entity["type"] == "software" and entity["papers"][0]["relations"] == ["uses_software"]
    assert [t["key"] for t in entity["related"]["tasks"]] == ["unlearning"]
    assert extended["stats"]["body"]["counts"]["softwares"] == 1
    spec = extended["openapi"]["body"]
    assert "/softwares" in spec["paths"]
    assert "softwares" in spec["components"]["schemas"]["PaperDetail"]["properties"]


def test_the_new_type_reaches_the_graph_exports(extended: dict) -> None:
    assert extended["graph_types"] == ["Paper", "Software", "Task"]
    software = next(n for n in extended["cytoscape"] if n["type"] == "Software")
    assert software["label"] == "PyTorch"


def test_the_explorer_holds_no_list_of_types() -> None:
    js = (Path(__file__).resolve().parents[2] / "service/static/explorer/explorer.js").read_text()
    assert '"/schema"' in js
    for name in ("Task", "Method", "Dataset", "Metric"):
        assert f'"{name}"' not in js and f"{name}:" not in js
