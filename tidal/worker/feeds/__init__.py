"""The data feeds, one per data path, each registered in `FEED_REGISTRY` under the name a policy's
`pipeline` gives."""
from tidal.worker.feeds.common import Feed
from tidal.worker.feeds.offline import OfflineFeed
from tidal.worker.feeds.offline_to_online import OfflineToOnlineFeed
from tidal.worker.feeds.ppg import AuxPhaseFeed
from tidal.worker.feeds.replay import ReplayFeed
from tidal.worker.feeds.repr import ReprFeed
from tidal.worker.feeds.rollout import RolloutFeed
from tidal.worker.feeds.sqil import SQILFeed
from tidal.worker.feeds.unroll import UnrollFeed

__all__ = ['AuxPhaseFeed', 'Feed', 'OfflineFeed', 'OfflineToOnlineFeed', 'ReplayFeed', 'ReprFeed', 'RolloutFeed', 'SQILFeed', 'UnrollFeed']
