"""Settings of the demo project: the add-on is the whole scrapy-simhash set-up."""

BOT_NAME = "demo"
SPIDER_MODULES = ["demo.spiders"]
NEWSPIDER_MODULE = "demo.spiders"

ADDONS = {"scrapy_simhash.Addon": 300}

# Optional: every SIMHASH_* setting has a default. Uncomment to try them.
# SIMHASH_MAX_DISTANCE = 3          # bits; 0 finds exact duplicates only
# SIMHASH_ACTION = "mark"           # keep near-duplicates, mark response.meta["simhash"]
# SIMHASH_DEBUG = True              # log every near-duplicate, not only the first
# SIMHASH_INDEX = "simhash.index"   # keep the index on disk between crawls

ROBOTSTXT_OBEY = True
# Breadth-first, so pages linked from the home page are seen before their copies deeper down.
DEPTH_PRIORITY = 1
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"
CONCURRENT_REQUESTS = 4
LOG_LEVEL = "INFO"
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
