"""The profile's ``kubeflow`` section: what tests/kubeflow expects of the Kubeflow endpoint."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from gpuconform.profile import catalogs
from gpuconform.profile._base import FilePath, HttpsUrl, Strict

KUBEFLOW_110_COMPONENTS = catalogs.KUBEFLOW_110_COMPONENTS
KUBEFLOW_CLUSTER_ADMIN_SUBJECTS = catalogs.KUBEFLOW_CLUSTER_ADMIN_SUBJECTS


class KubeflowAccount(Strict):
    username: str = Field("user@example.com", description="dex login (the email of a static or upstream user)")
    namespace: str = Field("kubeflow-user-example-com", description="the user's profile namespace")
    password_env: str | None = Field("GPUCONFORM_KUBEFLOW_PASSWORD",
                                     description="environment variable holding the password (never the profile)")
    password_file: FilePath = Field(None, description="file holding the password (first line), if no env var")


class KubeflowIngress(Strict):
    name: str = Field("ingress-kubeflow", description="name of the Ingress")
    namespace: str = Field("istio-system", description="namespace of the Ingress")
    ingress_class: str | None = Field("nginx", description="spec.ingressClassName; null: not checked")
    service: str = Field("istio-ingressgateway", description="backend Service the Ingress must route to")
    port: int = Field(80, ge=1, le=65535, description="backend Service port")


class KubeflowIssuer(Strict):
    kind: Literal["ClusterIssuer", "Issuer"] = Field("ClusterIssuer", description="cert-manager issuer kind")
    name: str = Field("kubeflow-self-signing-issuer", description="cert-manager issuer Kubeflow installs")
    namespace: str | None = Field(None, description="namespace of an Issuer (not for a ClusterIssuer)")


class KubeflowWebApp(Strict):
    name: str = Field(..., description="the web app, as the report names it")
    path: str = Field(..., description="GET path; {namespace} becomes the user's profile namespace")
    keys: tuple[str, ...] = Field((), description="top-level JSON keys the answer must have")
    equals: dict[str, Any] = Field(default_factory=dict, description="top-level JSON values the answer must have")


#: The web apps a Kubeflow 1.10 user reaches (gpuconform.profile.catalogs).
KUBEFLOW_WEB_APPS = tuple(KubeflowWebApp(**app) for app in catalogs.KUBEFLOW_WEB_APPS)


class KubeflowTimeouts(Strict):
    http_s: float = Field(15, gt=0, le=3600, description="one HTTP request to the Kubeflow endpoint")


class KubeflowExpectations(Strict):
    url: HttpsUrl = Field(
        None, description="https://<host>[:port]/ users open; null: the kubeflow layer is skipped")
    ca_bundle: FilePath = Field(None, description="PEM CA bundle the served certificate must verify against; "
                                                    "null: the system trust store")
    cert_min_days: int = Field(14, ge=0, le=3650, description="warn when the served certificate expires sooner "
                                                     "(an expired certificate fails)")
    production: bool = Field(True, description="true: the default user@example.com / 12341234 must be rejected")
    cookie_name: str = Field("oauth2_proxy_kubeflow", description="oauth2-proxy session cookie (cookie_name)")
    account: KubeflowAccount = Field(KubeflowAccount(), description="the user the checks log in as")
    second_account: KubeflowAccount | None = Field(
        None, description="another user: must get 403 on account's namespace (tenant isolation)")
    ingress: KubeflowIngress | None = Field(
        None, description="the Ingress in front of the istio gateway, declared when the platform has one (the "
                          "article's ingress-kubeflow: `ingress: {}`); null: none is checked (kubeflow/manifests' "
                          "example install has no Ingress, its gateway Service is ClusterIP)")
    issuer: KubeflowIssuer = Field(KubeflowIssuer(), description="the issuer of the endpoint's certificate")
    components: dict[str, tuple[str, ...]] = Field(
        default_factory=lambda: dict(catalogs.KUBEFLOW_110_COMPONENTS),
        description="namespace -> Deployments (statefulset/<name> for StatefulSets) that must be available")
    web_apps: tuple[KubeflowWebApp, ...] = Field(KUBEFLOW_WEB_APPS, description="endpoints that must answer the user")
    cluster_admin_subjects: tuple[str, ...] = Field(
        catalogs.KUBEFLOW_CLUSTER_ADMIN_SUBJECTS,
        description="the only subjects (Kind:name or Kind:namespace:name) bound to ClusterRole cluster-admin")
    timeouts: KubeflowTimeouts = Field(KubeflowTimeouts(), description="deadlines of the kubeflow layer")


