"""Users reach Kubeflow over TLS they can trust, through the Ingress the profile declares (the article's
`ingress-kubeflow`; an install from kubeflow/manifests' example has none and declares none)."""
import warnings

from gpuconform.checks import check
from gpuconform.kubeflow import objects


class CertificateExpiresSoon(UserWarning):
    """The served certificate is valid for fewer days than the profile's cert_min_days."""

TLS_FIX = ("serve a certificate for the Kubeflow host issued by the CA users trust (the Ingress TLS "
           "secret, e.g. a cert-manager Certificate); point kubeflow.ca_bundle at that CA's bundle")


@check("kubeflow.ingress.routes", "The Kubeflow Ingress routes the host to the istio ingress gateway",
       fix="kubectl -n istio-system edit ingress ingress-kubeflow: rule host <kubeflow host>, "
           "backend service istio-ingressgateway port 80, ingressClassName nginx")
def test_ingress_routes(cluster, kubeflow_ingress, kf, kf_evidence):
    """The Ingress kubeflow.ingress has a rule for the profile's host whose backend is the
    gateway service and port, with the expected ingress class."""
    want = kubeflow_ingress
    ing = objects.ingress(cluster.cluster, want.namespace, want.name)
    assert ing is not None, f"Ingress {want.namespace}/{want.name} not found, expected it (kubeflow.ingress declares it)"
    kf_evidence.add(f"Ingress {want.namespace}/{want.name}", str(ing.get("spec", {})))
    backends = objects.ingress_backends(ing, kf.host)
    found = {"class": ing.get("spec", {}).get("ingressClassName"), "backends": backends}
    expected = {"class": want.ingress_class or found["class"], "backends": [(want.service, want.port)]}
    assert found == expected, f"host {kf.host} routes to {found}, expected {expected}"


@check("kubeflow.ingress.tls_host", "The Kubeflow Ingress has TLS for the host",
       fix="add spec.tls with the Kubeflow host and its certificate secret to ingress-kubeflow")
def test_ingress_tls(cluster, kubeflow_ingress, kf):
    """The Ingress kubeflow.ingress lists the profile's host under spec.tls."""
    want = kubeflow_ingress
    ing = objects.ingress(cluster.cluster, want.namespace, want.name)
    assert ing is not None, f"Ingress {want.namespace}/{want.name} not found, expected it (kubeflow.ingress declares it)"
    hosts = objects.ingress_tls_hosts(ing)
    assert kf.host in hosts, f"TLS hosts {hosts or 'none'}, expected {kf.host}"


@check("kubeflow.tls.trusted", "The served certificate verifies against the CA bundle", fix=TLS_FIX)
def test_tls_trusted(kf, kf_evidence):
    """The certificate served at kubeflow.url chains to kubeflow.ca_bundle (or the system store)."""
    cert = kf.certificate()
    kf_evidence.add("served certificate", cert.summary())
    assert cert.chain_error is None, (f"certificate of {kf.host} (issuer {cert.issuer}) does not verify: "
                                      f"{cert.chain_error}, expected a chain to {kf.ca_bundle or 'the system store'}")


@check("kubeflow.tls.hostname", "The served certificate names the Kubeflow host", fix=TLS_FIX)
def test_tls_hostname(kf, kf_evidence):
    """The served certificate's subject alternative names cover the host of kubeflow.url."""
    cert = kf.certificate()
    kf_evidence.add("served certificate", cert.summary())
    assert cert.matches(kf.host), f"certificate names {', '.join(cert.names) or 'nothing'}, expected {kf.host}"


@check("kubeflow.tls.expiry", "The served certificate has not expired (warns when it soon will)",
       fix="renew the certificate (cert-manager: kubectl cert-manager renew, or check the Certificate's status)")
def test_tls_expiry(kf, kubeflow_expected, kf_evidence):
    """The served certificate is still valid; under kubeflow.cert_min_days days left the check
    passes with a warning (in the evidence and pytest's warnings summary)."""
    cert = kf.certificate()
    days = cert.days_left()
    kf_evidence.add("served certificate", cert.summary())
    assert days > 0, f"certificate expired on {cert.not_after:%Y-%m-%d %H:%M} UTC"
    if days < kubeflow_expected.cert_min_days:
        text = (f"certificate expires {cert.not_after:%Y-%m-%d} (in {days:.0f} days), under the profile's "
                f"warning threshold of {kubeflow_expected.cert_min_days} days")
        kf_evidence.add("WARNING", text)
        warnings.warn(CertificateExpiresSoon(text), stacklevel=1)