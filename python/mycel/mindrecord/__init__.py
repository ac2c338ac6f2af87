"""MindRecord: our paged record format (FileWriter, readers, converters)."""
