"""Host-side software: the Etherbone client, packet builders and CLIs."""
