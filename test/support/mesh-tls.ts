// Certificates for the mesh port over TLS, made with the openssl CLI (node:crypto makes no X.509 certificates):
// a CA, a certificate it signs for 127.0.0.1 with its key, and a second CA that signed nothing here.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface MeshCertificates {
  caFile: string
  certFile: string
  keyFile: string
  /** a CA that did not sign `certFile`: a dialer trusting only it must refuse the port */
  otherCaFile: string
  remove(): void
}

export function makeMeshCertificates(): MeshCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'apiary-mesh-tls-'))
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1']
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=apiary mesh test CA')
  openssl('req', '-x509', ...ec, '-keyout', 'other-ca.key', '-out', 'other-ca.crt', '-subj', '/CN=apiary other CA')
  openssl('req', ...ec.slice(0, -2), '-keyout', 'mesh.key', '-out', 'mesh.csr', '-subj', '/CN=127.0.0.1')
  writeFileSync(join(dir, 'mesh.ext'), 'subjectAltName=IP:127.0.0.1\n')
  const ca = ['-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial']
  openssl('x509', '-req', '-in', 'mesh.csr', ...ca, '-days', '1', '-extfile', 'mesh.ext', '-out', 'mesh.crt')
  return {
    caFile: join(dir, 'ca.crt'),
    certFile: join(dir, 'mesh.crt'),
    keyFile: join(dir, 'mesh.key'),
    otherCaFile: join(dir, 'other-ca.crt'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}
