"""The controller's image every broker shares (Kafka's metadata module): topics,
assignments and ISR (`cluster_metadata`), partition reassignments (`reassignment`), client
quotas (`client_quotas`), and the changes to dynamic configs that AlterConfigs and
IncrementalAlterConfigs make (`config_changes`).

`config_changes` lives here rather than beside the config definitions because it reads and
changes the image (a topic must exist to be configured), as Kafka's controller does; the
config room stays below the image.
"""
