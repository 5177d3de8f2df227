"""Method taxonomy where the text says so (``kg_hypernyms``), on constructed sentences."""

from __future__ import annotations

from kg.model import Record
from kg.store.taxonomy import stated_links


def _links(extractor, text: str) -> list[tuple[str, str, str, str]]:  # noqa: ANN001
    paper = extractor.extract_one(Record("tax", text))
    return [
        (h.narrower.label, h.broader.label, h.cue, text[h.start : h.end]) for h in paper.hypernyms
    ]


def test_an_appositive_names_the_broader_method(extractor) -> None:  # noqa: ANN001
    [(narrower, broader, cue, words)] = _links(
        extractor, "We fine-tune the model with GRPO, a policy-gradient method, on math problems."
    )
    assert (narrower, broader, cue) == (
        "Group Relative Policy Optimization",
        "policy gradient",
        "appositive",
    )
    assert words == "GRPO, a policy-gradient method"  # the offsets point at the words that say it


def test_a_copula_and_a_variant_of(extractor) -> None:  # noqa: ANN001
    links = _links(
        extractor, "PPO is a policy gradient algorithm. DoRA, a variant of LoRA, is cheap."
    )
    assert ("proximal policy optimization", "policy gradient", "copula") in [
        link[:3] for link in links
    ]
    assert ("DoRA", "low-rank adaptation", "appositive") in [link[:3] for link in links]


def test_such_as_links_every_listed_method(extractor) -> None:  # noqa: ANN001
    links = _links(extractor, "Policy gradient methods such as PPO and GRPO are unstable.")
    # The broader method is labelled as this sentence writes it ("Policy gradient").
    assert {(n, b.lower()) for n, b, _, _ in links} == {
        ("proximal policy optimization", "policy gradient"),
        ("Group Relative Policy Optimization", "policy gradient"),
    }


def test_no_link_without_an_explicit_statement(extractor) -> None:  # noqa: ANN001
    assert (
        _links(extractor, "We propose FooNet, a simple yet effective method for segmentation.")
        == []
    )
    assert _links(extractor, "PPO is not a policy gradient algorithm.") == []
    # names alone say nothing: GRPO is not linked to PPO because both end in "PO"
    assert _links(extractor, "We compare GRPO with PPO on math problems.") == []
    # a class word alone names no method node
    assert _links(extractor, "We compare against optimizers such as Adam and SGD.") == []


def test_contradicting_papers_give_no_link() -> None:
    assert stated_links([("a", "b"), ("b", "a"), ("c", "d"), ("c", "d"), ("e", "e")]) == [
        ("c", "d")
    ]


STORE_ABSTRACTS = {
    "dora": "We adapt large language models with DoRA, a variant of LoRA. "
    "DoRA reaches 71.2% accuracy on GSM8K.",
    "mupo": "We propose MuPO for reasoning. MuPO is a variant of GRPO that needs no critic.",
}


def test_stored_links_keep_their_words_and_reach_rest(extractor, tmp_path) -> None:  # noqa: ANN001
    from fastapi.testclient import TestClient

    from kg.ingest import ingest_items
    from kg.store.embedded import open_store
    from kg.store.validation import validate_store
    from service.app import create_app
    from service.settings import Settings

    path = tmp_path / "store"
    store = open_store(path)
    ingest_items([Record(k, v) for k, v in STORE_ABSTRACTS.items()], store, extractor=extractor)
    found = store.query(
        "PREFIX kg: <https://w3id.org/mlkg/ontology#> SELECT ?p ?s ?e ?cue "
        "WHERE { ?t a kg:TaxonomyStatement ; kg:inPaper ?p ; kg:start ?s ; kg:end ?e ; "
        "kg:cue ?cue }"
    )
    stated = sorted(
        (r["p"].value.rsplit("/", 1)[1], int(r["s"].value), int(r["e"].value), r["cue"].value)
        for r in found
    )
    assert [(p, STORE_ABSTRACTS[p][s:e], cue) for p, s, e, cue in stated] == [
        ("dora", "DoRA, a variant of LoRA", "appositive"),
        ("mupo", "MuPO is a variant of GRPO", "copula"),
    ]
    report = validate_store(store)
    assert report.conforms, report.violations[:5]
    store.close()
    app = create_app(Settings(store=str(path), query_workers=1, log_level="warning"))
    with TestClient(app) as client:
        dora = client.get("/entities/method/dora").json()
        assert [m["label"] for m in dora["broader"]] == ["low-rank adaptation"]
        lora = client.get(dora["broader"][0]["href"]).json()
        assert [m["key"] for m in lora["narrower"]] == ["dora"]
        assert client.get("/entities/method/mupo").json()["narrower"] == []
