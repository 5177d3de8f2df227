"""Leaderboards, related papers, comparisons and the task taxonomy over REST,
in-process on a real store built from a handful of hand-written abstracts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kg.model import Record
from service.app import create_app
from service.settings import Settings

ABSTRACTS = {
    "alpha": "We propose AlphaNet, a convolutional network for image classification. "
    "AlphaNet reaches 84.7% top-1 accuracy on ImageNet.",
    "beta": "We introduce BetaNet for image classification. "
    "BetaNet achieves 86.1% top-1 accuracy on ImageNet, outperforming AlphaNet.",
    "gamma": "We present GammaNet, a vision transformer for image classification. "
    "GammaNet obtains 79.3% top-1 accuracy on ImageNet.",
    "delta": "We propose DeltaGAN for image generation. "
    "DeltaGAN achieves an FID of 3.2 on CIFAR-10.",
    "eps": "We introduce EpsDiff, a diffusion model for image generation. "
    "EpsDiff achieves an FID of 2.1 on CIFAR-10.",
    "zeta": "We present ZetaFlow for image generation. "
    "ZetaFlow achieves an FID of 5.4 on CIFAR-10.",
    "eta": "We study offline reinforcement learning with EtaQ, a conservative critic. "
    "EtaQ improves the normalized return by 12% on D4RL.",
    "theta": "We study reinforcement learning in continuous control with ThetaPG. "
    "ThetaPG reaches a success rate of 91% on Meta-World.",
    "iota": "We study widget segmentation. We propose IotaSeg, which improves widget "
    "segmentation quality by 3%.",
    "kappa": "We address multi-view widget segmentation with KappaSeg, a new segmentation "
    "model for multi-view widget segmentation.",
    # a benchmark paper: the models' numbers name no place, they are on LambdaBench
    "lambda": "We present LambdaBench, a benchmark of multi-step widget puzzles. "
    "Models such as GPT-4o, Llama-3-70B and Qwen2.5-72B reach accuracies of 61.0%, 42.5% "
    "and 38.2%, respectively.",
}


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory, extractor) -> Path:  # noqa: ANN001
    from kg.ingest import ingest_items
    from kg.store.embedded import open_store

    path = tmp_path_factory.mktemp("results") / "store"
    store = open_store(path)
    records = [Record(pid, text) for pid, text in ABSTRACTS.items()]
    report = ingest_items(records, store, extractor=extractor)
    store.close()
    assert report.added == len(ABSTRACTS)
    return path


@pytest.fixture(scope="module")
def client(store_path: Path) -> Iterator[TestClient]:
    app = create_app(Settings(store=str(store_path), query_workers=1, log_level="warning"))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def get(client: TestClient, url: str) -> Any:
    response = client.get(url)
    assert response.status_code == 200, response.text
    return response.json()


def problem(client: TestClient, url: str, status: int) -> dict[str, Any]:
    response = client.get(url)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return response.json()


def test_leaderboards_list_one_item_per_dataset_and_metric(client: TestClient) -> None:
    body = get(client, "/leaderboards?min_results=3")
    boards = {(i["dataset"]["label"], i["metric"]["label"]): i for i in body["items"]}
    assert set(boards) == {
        ("ImageNet", "top-1 accuracy"),
        ("CIFAR-10", "Fréchet inception distance"),
        ("LambdaBench", "accuracy"),
    }
    imagenet = boards[("ImageNet", "top-1 accuracy")]
    assert imagenet["results"] == 3 and imagenet["metric"]["higher_is_better"] is True
    assert imagenet["href"] == "/leaderboards/imagenet/top1-accuracy"
    fid = boards[("CIFAR-10", "Fréchet inception distance")]
    assert fid["href"] == "/leaderboards/cifar10/fr%C3%A9chet-inception-distance"  # encoded
    assert boards[("CIFAR-10", "Fréchet inception distance")]["metric"]["higher_is_better"] is False
    # a relative change (+12% on D4RL) is no leaderboard entry
    all_boards = get(client, "/leaderboards")["items"]
    assert not any(i["dataset"]["label"] == "D4RL" for i in all_boards)


def test_a_benchmark_papers_own_benchmark_is_a_dataset_with_a_leaderboard(
    client: TestClient,
) -> None:
    body = get(client, "/leaderboards/lambdabench/accuracy")
    assert [(i["value"]["number"], i["method"]["label"], i["proposed"]) for i in body["items"]] == [
        (61.0, "GPT-4o", False),
        (42.5, "Llama-3-70B", False),
        (38.2, "Qwen2.5-72B", False),
    ]
    # the paper proposed it (a method to the extractor), the corpus types the node by
    # what the text calls it: a dataset the paper evaluates on, and no method node
    assert get(client, "/entities/dataset/lambdabench")["label"] == "LambdaBench"
    assert client.get("/entities/method/lambdabench").status_code == 404
    paper = get(client, "/papers/lambda")
    assert [d["label"] for d in paper["datasets"]] == ["LambdaBench"]


def test_higher_is_better_sorts_descending(client: TestClient) -> None:
    body = get(client, "/leaderboards/imagenet/top1-accuracy")
    assert body["higher_is_better"] is True
    numbers = [i["value"]["number"] for i in body["items"]]
    assert numbers == [86.1, 84.7, 79.3]
    assert [i["rank"] for i in body["items"]] == [1, 2, 3]
    first = body["items"][0]
    assert first["paper"] == {"id": "beta", "title": None, "href": "/papers/beta"}
    assert first["method"]["label"] == "BetaNet" and first["proposed"] is True


def test_lower_is_better_sorts_ascending(client: TestClient) -> None:
    body = get(client, "/leaderboards/cifar10/fr%C3%A9chet-inception-distance")
    assert body["higher_is_better"] is False
    assert [i["value"]["number"] for i in body["items"]] == [2.1, 3.2, 5.4]


def test_every_row_points_at_the_sentence_with_its_value(client: TestClient) -> None:
    for href in [i["href"] for i in get(client, "/leaderboards")["items"]]:
        for row in get(client, href)["items"]:
            abstract = ABSTRACTS[row["paper"]["id"]]
            claim = row["claim"]
            assert abstract[claim["start"] : claim["end"]] == claim["text"]
            assert row["value"]["text"] in claim["text"]


def test_leaderboard_filters_and_errors(client: TestClient) -> None:
    only = get(client, "/leaderboards?dataset=ImageNet")["items"]
    assert [i["dataset"]["label"] for i in only] == ["ImageNet"]
    assert get(client, "/leaderboards?task=image%20generation")["total"] == 1
    problem(client, "/leaderboards/imagenet/no-such-metric", 404)
    problem(client, "/leaderboards?dataset=nowhere", 404)
    problem(client, "/leaderboards?min_results=0", 422)


def test_related_papers_weigh_rare_shared_entities(client: TestClient) -> None:
    body = get(client, "/papers/alpha/related?limit=10")
    ids = [i["paper"]["id"] for i in body["items"]]
    assert "alpha" not in ids
    assert set(ids[:2]) == {"beta", "gamma"}  # same task and dataset
    assert all(i["score"] > 0 and i["shared"] for i in body["items"])
    shared = {s["label"] for s in body["items"][0]["shared"]}
    assert "ImageNet" in shared
    assert get(client, "/papers/alpha/related?limit=1")["items"].__len__() == 1
    problem(client, "/papers/nope/related", 404)


def test_compare_side_by_side(client: TestClient) -> None:
    body = get(client, "/compare?papers=alpha,delta")
    assert [i["paper"]["id"] for i in body["items"]] == ["alpha", "delta"]
    alpha = body["items"][0]
    assert [m["label"] for m in alpha["proposed_methods"]] == ["AlphaNet"]
    assert [d["label"] for d in alpha["datasets"]] == ["ImageNet"]
    assert alpha["results"][0]["value"]["number"] == 84.7
    problem(client, "/compare?papers=alpha,nope", 404)
    problem(client, "/compare?papers=" + ",".join(["alpha"] * 11), 422)
    problem(client, "/compare?papers=,", 422)


def test_task_taxonomy_links_offline_rl_to_rl(store_path: Path) -> None:
    from kg.store.embedded import open_store
    from kg.store.queries import rows, run

    store = open_store(store_path, read_only=True)
    found = rows(
        run(
            store,
            "task-hierarchy",
            {"task": "https://w3id.org/mlkg/id/task/reinforcement-learning"},
        )
    )
    narrower = {r["other"].value for r in found if r["relation"].value.endswith("narrower")}
    assert "https://w3id.org/mlkg/id/task/offline-reinforcement-learning" in narrower
    store.close()


def test_leaderboard_named_query_sorts_by_direction(store_path: Path) -> None:
    from kg.store.embedded import open_store
    from kg.store.queries import rows, run

    store = open_store(store_path, read_only=True)
    id_ = "https://w3id.org/mlkg/id/"
    up = rows(
        run(
            store,
            "leaderboard",
            {"dataset": id_ + "dataset/imagenet", "metric": id_ + "metric/top1-accuracy"},
        )
    )
    down = rows(
        run(
            store,
            "leaderboard",
            {
                "dataset": id_ + "dataset/cifar10",
                "metric": id_ + "metric/fr%C3%A9chet-inception-distance",
            },
        )
    )
    assert [float(r["number"].value) for r in up] == [86.1, 84.7, 79.3]
    assert [float(r["number"].value) for r in down] == [2.1, 3.2, 5.4]
    boards = rows(run(store, "leaderboards"))
    assert {r["results"].value for r in boards} >= {"3"}
    store.close()


def test_kg_leaderboard_cli(store_path: Path) -> None:
    from click.testing import CliRunner

    from kg.cli.main import main

    runner = CliRunner()
    listed = runner.invoke(main, ["leaderboard", "--store", str(store_path)])
    assert listed.exit_code == 0, listed.output
    assert "ImageNet" in listed.output and "higher" in listed.output
    board = runner.invoke(main, ["leaderboard", "--store", str(store_path), "CIFAR-10", "FID"])
    assert board.exit_code == 0, board.output
    lines = [line for line in board.output.splitlines() if line[:4].strip().endswith(".")]
    assert [line.split()[1] for line in lines] == ["2.1", "3.2", "5.4"]
    assert "lower is better" in board.output
    missing = runner.invoke(main, ["leaderboard", "--store", str(store_path), "nowhere", "FID"])
    assert missing.exit_code == 2 and "no dataset" in missing.output


def test_tasks_list_broader_and_narrower(client: TestClient) -> None:
    broad = get(client, "/entities/task/widget-segmentation")
    assert [t["key"] for t in broad["narrower"]] == ["multiview-widget-segmentation"]
    assert broad["broader"] == []
    narrow = get(client, "/entities/task/multiview-widget-segmentation")
    assert [t["label"] for t in narrow["broader"]] == ["widget segmentation"]
    # "a new segmentation model" names no method: no link is guessed
    assert get(client, "/entities/method/kappaseg")["broader"] == []


def test_papers_of_a_task_include_its_narrower_tasks(client: TestClient) -> None:
    wide = get(client, "/papers?task=widget-segmentation")
    assert {p["id"] for p in wide["items"]} == {"iota", "kappa"} and wide["total"] == 2
    exact = get(client, "/papers?task=widget-segmentation&exact=true")
    assert {p["id"] for p in exact["items"]} == {"iota"} and exact["total"] == 1
    both = get(client, "/papers?task=widget-segmentation&method=kappaseg")
    assert [p["id"] for p in both["items"]] == ["kappa"]


def test_paper_page_shows_results_and_related_papers(client: TestClient) -> None:
    response = client.get("/id/paper/alpha", headers={"Accept": "text/html"})
    assert response.status_code == 200
    html = response.text
    assert "<h2>Results</h2>" in html and "84.7%" in html and "top-1 accuracy" in html
    assert "<h2>Related papers</h2>" in html and "/id/paper/beta" in html


def test_deriving_the_taxonomy_keeps_the_search_index_fresh(store_path: Path) -> None:
    from kg.store.embedded import open_store
    from kg.store.index import index_of

    store = open_store(store_path, read_only=True)
    try:
        index = index_of(store)
        assert index is None or index.state() != "stale"
    finally:
        store.close()
