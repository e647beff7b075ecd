// Every scenario `npm run bench` knows, in the order a full run takes them (`--only` picks by name).
import type { AnyScenario } from './lib/scenario'
import { scenario as admission } from './scenarios/admission'
import { scenario as agents } from './scenarios/agents'
import { scenario as ceiling } from './scenarios/ceiling'
import { scenario as channelFanout } from './scenarios/channel-fanout'
import { scenario as cluster } from './scenarios/cluster'
import { scenario as clusterFanout } from './scenarios/cluster-fanout'
import { scenario as consoleCost } from './scenarios/console'
import { scenario as fanout } from './scenarios/fanout'
import { scenario as idleMemory } from './scenarios/idle-memory'
import { scenario as ingestClosed } from './scenarios/ingest-closed'
import { scenario as ingestPg } from './scenarios/ingest-pg'
import { scenario as ingestPinned } from './scenarios/ingest-pinned'
import { scenario as ingestPipelined } from './scenarios/ingest-pipelined'
import { scenario as ingestWithReads } from './scenarios/ingest-with-reads'
import { scenario as jobs } from './scenarios/jobs'
import { scenario as jobsCluster } from './scenarios/jobs-cluster'
import { scenario as mesh } from './scenarios/mesh'
import { scenario as req } from './scenarios/req'
import { scenario as reqBurst } from './scenarios/req-burst'
import { scenario as store } from './scenarios/store'
import { scenario as storePg } from './scenarios/store-pg'

export const SCENARIOS: readonly AnyScenario[] = [
  ceiling,
  ingestPinned,
  ingestClosed,
  ingestPipelined,
  store,
  fanout,
  channelFanout,
  req,
  reqBurst,
  ingestWithReads,
  idleMemory,
  agents,
  jobs,
  consoleCost,
  clusterFanout,
  cluster,
  jobsCluster,
  admission,
  ingestPg,
  storePg,
  mesh,
]
