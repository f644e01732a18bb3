//! Following the table's DynamoDB stream through the DynamoDB Streams API, for `vigil serve
//! --dynamodb` (in AWS, Lambda's event source mapping does this). Shards are discovered again
//! periodically, a closed shard is finished and remembered, children wait for their parent, and
//! every shard resumes after the last record it finished (never from LATEST), so records written
//! while the server was stopped are still dispatched.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use aws_lambda_events::dynamodb::EventRecord;
use aws_sdk_dynamodbstreams::Client as StreamsClient;
use aws_sdk_dynamodbstreams::types::{Record, Shard, ShardIteratorType};

use crate::dynamo::DynamoStore;
use crate::records::feed_events;
use vigil_core::report::Chain;
use vigil_core::store::feed::{BACKOFF, ChangeFeed, FeedConsumer, POLL};
use vigil_core::store::{DeliveryStore, OpFailed, StoreError};

const DONE: &str = "CLOSED";
const REDISCOVER: Duration = Duration::from_secs(5);

fn checkpoint_name(shard: &str) -> String {
    format!("stream-shard:{shard}")
}

fn backend(op: &'static str, e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Backend(OpFailed::cause(op, e))
}

/// A DynamoDB Streams record in the shape Lambda delivers it.
pub fn to_event_record(r: &Record) -> EventRecord {
    let mut rec = EventRecord::default();
    rec.event_id = r.event_id().unwrap_or_default().to_owned();
    rec.event_name = r
        .event_name()
        .map(|n| n.as_str().to_owned())
        .unwrap_or_default();
    rec.event_source = r.event_source().map(str::to_owned);
    rec.event_version = r.event_version().map(str::to_owned);
    rec.aws_region = r.aws_region().unwrap_or_default().to_owned();
    if let Some(sr) = r.dynamodb() {
        rec.change.keys = sr.keys().cloned().unwrap_or_default().into();
        rec.change.new_image = sr.new_image().cloned().unwrap_or_default().into();
        rec.change.old_image = sr.old_image().cloned().unwrap_or_default().into();
        rec.change.sequence_number = sr.sequence_number().map(str::to_owned);
        rec.change.size_bytes = sr.size_bytes().unwrap_or_default();
    }
    rec
}

struct Follower<C> {
    store: DynamoStore,
    consumer: C,
    client: StreamsClient,
    stream_arn: String,
    shards: Vec<Shard>,
    finished: HashSet<String>,
    iterators: HashMap<String, String>,
}

/// Why a round of following stopped: our storage, or the consumer at some record.
enum Stop {
    Store(StoreError),
    Consumer,
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        Stop::Store(e)
    }
}

impl<C: FeedConsumer> Follower<C> {
    async fn discover(&mut self) -> Result<(), StoreError> {
        let mut shards = Vec::new();
        let mut start: Option<String> = None;
        loop {
            let out = self
                .client
                .describe_stream()
                .stream_arn(&self.stream_arn)
                .set_exclusive_start_shard_id(start.take())
                .send()
                .await
                .map_err(|e| backend("DescribeStream", e))?;
            let Some(desc) = out.stream_description else {
                break;
            };
            shards.extend(desc.shards.unwrap_or_default());
            match desc.last_evaluated_shard_id {
                Some(last) => start = Some(last),
                None => break,
            }
        }
        for s in &shards {
            let id = s.shard_id().unwrap_or_default();
            if !self.finished.contains(id) {
                let cp = self.store.checkpoint(&checkpoint_name(id)).await?;
                if cp.as_deref() == Some(DONE) {
                    self.finished.insert(id.to_owned());
                }
            }
        }
        self.shards = shards;
        Ok(())
    }

    /// A shard is ready when its parent is finished or no longer listed (trimmed).
    fn ready(&self, s: &Shard) -> bool {
        match s.parent_shard_id() {
            None => true,
            Some(p) => {
                self.finished.contains(p) || !self.shards.iter().any(|x| x.shard_id() == Some(p))
            }
        }
    }

    async fn iterator(&mut self, shard: &str) -> Result<Option<String>, StoreError> {
        if let Some(it) = self.iterators.remove(shard) {
            return Ok(Some(it));
        }
        let after = self.store.checkpoint(&checkpoint_name(shard)).await?;
        let req = self
            .client
            .get_shard_iterator()
            .stream_arn(&self.stream_arn)
            .shard_id(shard);
        let req = match after {
            Some(seq) => req
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(seq),
            None => req.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        let out = req
            .send()
            .await
            .map_err(|e| backend("GetShardIterator", e))?;
        Ok(out.shard_iterator)
    }

    /// Reads one batch of a shard and hands it to the consumer. True when it found records.
    async fn poll_shard(&mut self, shard: String) -> Result<bool, Stop> {
        let Some(it) = self.iterator(&shard).await? else {
            self.finish(&shard).await?;
            return Ok(false);
        };
        let out = self
            .client
            .get_records()
            .shard_iterator(it)
            .limit(100)
            .send()
            .await
            .map_err(|e| backend("GetRecords", e))?;
        let records: Vec<EventRecord> = out.records().iter().map(to_event_record).collect();
        let store = self.store.clone();
        match self.consumer.consume(&feed_events(&records)).await {
            Ok(()) => {
                if let Some(seq) = records
                    .last()
                    .and_then(|r| r.change.sequence_number.clone())
                {
                    store.set_checkpoint(&checkpoint_name(&shard), &seq).await?;
                }
                match out.next_shard_iterator {
                    Some(next) => {
                        self.iterators.insert(shard, next);
                    }
                    None => self.finish(&shard).await?,
                }
                Ok(!records.is_empty())
            }
            Err(i) => {
                // Keep what finished; the next iterator starts after it.
                if let Some(seq) = i
                    .checked_sub(1)
                    .and_then(|j| records[j].change.sequence_number.clone())
                {
                    store.set_checkpoint(&checkpoint_name(&shard), &seq).await?;
                }
                Err(Stop::Consumer)
            }
        }
    }

    async fn finish(&mut self, shard: &str) -> Result<(), StoreError> {
        self.store
            .set_checkpoint(&checkpoint_name(shard), DONE)
            .await?;
        self.finished.insert(shard.to_owned());
        Ok(())
    }

    async fn round(&mut self) -> Result<bool, Stop> {
        let ready: Vec<String> = self
            .shards
            .iter()
            .filter(|s| !self.finished.contains(s.shard_id().unwrap_or_default()) && self.ready(s))
            .filter_map(|s| s.shard_id().map(str::to_owned))
            .collect();
        let mut busy = false;
        for shard in ready {
            busy |= self.poll_shard(shard).await?;
        }
        Ok(busy)
    }
}

async fn stream_arn(store: &DynamoStore) -> Result<String, StoreError> {
    let out = store
        .client()
        .describe_table()
        .table_name(store.table())
        .send()
        .await
        .map_err(|e| backend("DescribeTable", e))?;
    out.table
        .and_then(|t| t.latest_stream_arn)
        .ok_or_else(|| StoreError::Backend(format!("table {} has no stream", store.table()).into()))
}

impl ChangeFeed for DynamoStore {
    async fn follow<C: FeedConsumer>(self, consumer: C) {
        let client = StreamsClient::new(&crate::dynamo::sdk_config().await);
        let arn = loop {
            match stream_arn(&self).await {
                Ok(arn) => break arn,
                Err(e) => {
                    tracing::error!(error = %Chain(&e), "cannot find the table's stream");
                    tokio::time::sleep(BACKOFF).await;
                }
            }
        };
        let mut f = Follower {
            store: self,
            consumer,
            client,
            stream_arn: arn,
            shards: Vec::new(),
            finished: HashSet::new(),
            iterators: HashMap::new(),
        };
        let mut discovered: Option<Instant> = None;
        loop {
            if discovered.is_none_or(|t| t.elapsed() > REDISCOVER) {
                match f.discover().await {
                    Ok(()) => {
                        discovered = Some(Instant::now());
                        // Iterators are taken again from the checkpoints (the same position: a
                        // batch's checkpoint is written before its next iterator is kept). The
                        // emulator needs it: a canceled transaction makes moto replace the table
                        // with a copy, stream shard included, and an iterator taken before then
                        // reads the old shard, empty for ever. On DynamoDB it costs one
                        // GetShardIterator per shard every 5 s.
                        f.iterators.clear();
                    }
                    Err(e) => tracing::error!(error = %Chain(&e), "cannot list stream shards"),
                }
            }
            match f.round().await {
                Ok(true) => {}
                Ok(false) => tokio::time::sleep(POLL * 4).await,
                Err(stop) => {
                    if let Stop::Store(e) = stop {
                        tracing::error!(error = %Chain(&e), "following the stream failed; retrying");
                    }
                    // Iterators may have expired; resume from checkpoints.
                    f.iterators.clear();
                    tokio::time::sleep(BACKOFF).await;
                }
            }
        }
    }
}
