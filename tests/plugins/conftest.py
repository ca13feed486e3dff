"""Fixtures shared by the plugin tests: ``litellm_bin`` (LiteLLM's proxy,
installed once per test session for every module that starts one), and
``tls`` (a test CA and a certificate for 127.0.0.1, for HTTPS replay
servers)."""

from pathlib import Path

import pytest
import trustme

from tests.plugins.litellm_proxy import litellm_bin

__all__ = ["litellm_bin", "tls"]


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A CA's certificate, and a certificate for 127.0.0.1 with its key."""
    where = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    paths = (where / "ca.pem", where / "cert.pem", where / "key.pem")
    ca.cert_pem.write_to_path(str(paths[0]))
    cert.cert_chain_pems[0].write_to_path(str(paths[1]))
    cert.private_key_pem.write_to_path(str(paths[2]))
    return paths
