"""NHTSA: recalls, complaints, investigations and manufacturer communications."""
