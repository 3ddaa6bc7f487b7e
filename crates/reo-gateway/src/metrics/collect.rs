//! [`Out`]: metrics whose values are read at scrape time (snapshots of counters other components
//! keep), written through prometheus-client's descriptor encoder — each with its `# HELP` and
//! `# TYPE`, counters with their `_total` suffix.

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, EncodeGaugeValue, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;

/// One scrape's encoder for snapshot metrics.
pub(super) struct Out<'a>(pub DescriptorEncoder<'a>);

impl Out<'_> {
    /// A counter without labels (`name` gets `_total`).
    pub fn counter(&mut self, name: &str, help: &str, v: u64) -> fmt::Result {
        ConstCounter::new(v).encode(self.0.encode_descriptor(name, help, None, MetricType::Counter)?)
    }

    /// A gauge without labels.
    pub fn gauge<N: EncodeGaugeValue + fmt::Debug>(&mut self, name: &str, help: &str, v: N) -> fmt::Result {
        ConstGauge::new(v).encode(self.0.encode_descriptor(name, help, None, MetricType::Gauge)?)
    }

    /// A labelled counter family.
    pub fn counters<L: EncodeLabelSet>(&mut self, name: &str, help: &str, items: &[(L, u64)]) -> fmt::Result {
        let mut m = self.0.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (labels, v) in items {
            ConstCounter::new(*v).encode(m.encode_family(labels)?)?;
        }
        Ok(())
    }

    /// A labelled gauge family.
    pub fn gauges<L: EncodeLabelSet, N: EncodeGaugeValue + fmt::Debug + Copy>(
        &mut self,
        name: &str,
        help: &str,
        items: &[(L, N)],
    ) -> fmt::Result {
        let mut m = self.0.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (labels, v) in items {
            ConstGauge::new(*v).encode(m.encode_family(labels)?)?;
        }
        Ok(())
    }

    /// A labelled histogram family (live histograms another component keeps).
    pub fn histograms<L: EncodeLabelSet>(&mut self, name: &str, help: &str, items: &[(L, Histogram)]) -> fmt::Result {
        let mut m = self.0.encode_descriptor(name, help, None, MetricType::Histogram)?;
        for (labels, h) in items {
            h.encode(m.encode_family(labels)?)?;
        }
        Ok(())
    }
}
