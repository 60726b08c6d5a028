"""Synchronization network: 8-neighbour synchronizer mesh with max/umax/min/umin/or/and reductions."""
