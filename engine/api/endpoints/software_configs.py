"""Heat's ``/software_configs`` and ``/software_deployments`` (``specs/software-config.rst``):
the same paths, bodies and statuses (a create is 200, a delete 204)."""

from __future__ import annotations

import falcon

from engine.api import responses
from engine.api.requests import context, flag, integer, json_body
from engine.services.software_configs import SoftwareConfigs


class ConfigCollection:
    def __init__(self, configs: SoftwareConfigs) -> None:
        self._configs = configs

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        resp.media = {"software_configs": self._configs.list_configs(
            context(req), limit=integer(req, "limit"), marker=req.get_param("marker"),
            global_tenant=flag(req, "global_tenant"))}

    def on_post(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        resp.media = {"software_config": self._configs.create_config(context(req),
                                                                     json_body(req))}


class ConfigItem:
    def __init__(self, configs: SoftwareConfigs) -> None:
        self._configs = configs

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               config_id: str) -> None:
        resp.media = {"software_config": self._configs.show_config(context(req), config_id)}

    def on_delete(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                  config_id: str) -> None:
        self._configs.delete_config(context(req), config_id)
        responses.no_content(resp)


class DeploymentCollection:
    def __init__(self, configs: SoftwareConfigs) -> None:
        self._configs = configs

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        resp.media = {"software_deployments": self._configs.list_deployments(
            context(req), req.get_param("server_id"))}

    def on_post(self, req: falcon.Request, resp: falcon.Response, tenant_id: str) -> None:
        resp.media = {"software_deployment": self._configs.create_deployment(
            context(req), json_body(req))}


class DeploymentMetadata:
    def __init__(self, configs: SoftwareConfigs) -> None:
        self._configs = configs

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               server_id: str) -> None:
        resp.media = {"metadata": self._configs.metadata(context(req), server_id)}


class DeploymentItem:
    def __init__(self, configs: SoftwareConfigs) -> None:
        self._configs = configs

    def on_get(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               deployment_id: str) -> None:
        resp.media = {"software_deployment": self._configs.show_deployment(
            context(req), deployment_id)}

    def on_put(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
               deployment_id: str) -> None:
        resp.media = {"software_deployment": self._configs.update_deployment(
            context(req), deployment_id, json_body(req))}

    def on_delete(self, req: falcon.Request, resp: falcon.Response, tenant_id: str,
                  deployment_id: str) -> None:
        self._configs.delete_deployment(context(req), deployment_id)
        responses.no_content(resp)
